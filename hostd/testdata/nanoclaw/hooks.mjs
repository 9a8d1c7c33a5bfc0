// Registers resolve hooks for the harness: NanoClaw's container runner
// (which would start a Docker container) is replaced by a stub, as
// NanoClaw's own tests do with vi.mock('../../container-runner.js').
import { register } from 'node:module';

register('./resolve.mjs', import.meta.url);
