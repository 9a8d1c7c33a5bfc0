// Resolve hook (see hooks.mjs): any import of NanoClaw's
// src/container-runner resolves to the stub beside this file, and Bun's
// bun:sqlite (imported by the agent runner's modules) to another.
const stub = new URL('./container-runner-stub.mjs', import.meta.url).href;
const bunSqlite = new URL('./bun-sqlite-stub.mjs', import.meta.url).href;

export async function resolve(specifier, context, next) {
  if (specifier === 'bun:sqlite') {
    return { url: bunSqlite, shortCircuit: true };
  }
  const r = await next(specifier, context);
  if (/\/src\/container-runner\.(ts|js)$/.test(r.url)) {
    return { url: stub, shortCircuit: true };
  }
  return r;
}
