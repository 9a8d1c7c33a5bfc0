// Resolve hook (see hooks.mjs): any import of NanoClaw's
// src/container-runner resolves to the stub beside this file.
const stub = new URL('./container-runner-stub.mjs', import.meta.url).href;

export async function resolve(specifier, context, next) {
  const r = await next(specifier, context);
  if (/\/src\/container-runner\.(ts|js)$/.test(r.url)) {
    return { url: stub, shortCircuit: true };
  }
  return r;
}
