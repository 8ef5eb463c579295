/**
 * `node:http`, for the modules that use it at run time. Imported as an ES module, a built-in
 * gets a facade that reads every export, and `node:http`'s `WebSocket`, `CloseEvent` and
 * `MessageEvent` are getters that load Node's bundled undici (0.8 MB of source): about 3 MB of
 * the main thread's heap that nothing of the proxy's uses (bench/README.md, "Footprint: where
 * a worker's memory goes"). `process.getBuiltinModule` builds no facade. Types still come from
 * `import type ... from 'node:http'`, which loads nothing.
 */
export const http: typeof import('node:http') = process.getBuiltinModule('node:http');
