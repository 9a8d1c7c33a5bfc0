// Stands in for bun:sqlite in the harness (see resolve.mjs): the gate mode
// loads NanoClaw's agent runner formatter (container/agent-runner), whose
// module graph imports Bun's SQLite binding; the functions the harness calls
// never open a database, and this one refuses to.
export class Database {
  constructor() {
    throw new Error('bun:sqlite is not available under node (harness stub)');
  }
}
