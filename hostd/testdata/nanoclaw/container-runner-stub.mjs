// Stands in for NanoClaw's src/container-runner.ts in the harness: no
// container is started; a wake is recorded and reported as done.
export const woken = [];

export function wakeContainer(session) {
  woken.push(session.id);
  return Promise.resolve(true);
}

export function isContainerRunning() {
  return false;
}

export function getActiveContainerCount() {
  return 0;
}

export function killContainer(_sessionId, _reason, onExit) {
  if (onExit) onExit();
}

export function resolveProviderName() {
  return 'claude';
}

export async function buildAgentGroupImage() {}
