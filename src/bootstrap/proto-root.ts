/**
 * Reflected protobuf schemas read from the repository's `proto/` folder. The loader's schema
 * (schema.ts: every config message, the extensions' own included) is one; the gRPC service
 * messages filters call services with are another (`serviceRoot`), so a filter can encode
 * them without importing the extension registry that lists it.
 */
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type protobuf from 'protobufjs';

let library: typeof protobuf | undefined;

/**
 * protobufjs, loaded on first use: a data-plane worker thread imports the compile steps (and
 * so this module) but reflects a schema only for a gRPC service filter or a route's
 * `per_filter_config` Struct; the library alone is 0.7 MB of heap a thread (bench/README.md,
 * "Footprint: modules a worker does not load"). A CommonJS package, so `require` loads it at
 * once and shares the one instance `import` gives the modules that import it.
 */
export function protobufjs(): typeof protobuf {
  library ??= createRequire(import.meta.url)('protobufjs') as typeof protobuf;
  return library;
}

/** The repository's `proto/` folder, found from this module (works from `src/` and `dist/src/`). */
function protoDir(): string {
  let dir = path.dirname(fileURLToPath(import.meta.url));
  for (;;) {
    const candidate = path.join(dir, 'proto', 'envoy');
    if (existsSync(candidate)) return path.join(dir, 'proto');
    const parent = path.dirname(dir);
    if (parent === dir) throw new Error('proto/ folder not found above ' + fileURLToPath(import.meta.url));
    dir = parent;
  }
}

/** `files` under `proto/` (with their imports) and proto3 `sources`, resolved, field names kept as written. */
export function loadProtoRoot(files: readonly string[], sources: readonly string[] = []): protobuf.Root {
  const base = protoDir();
  const lib = protobufjs();
  const r = new lib.Root();
  // protobufjs bundles google/protobuf/*; google/rpc/status.proto is kept under proto/.
  r.resolvePath = (_origin, target) =>
    target.startsWith('google/protobuf/') ? target : path.join(base, target);
  r.loadSync([...files], { keepCase: true });
  for (const source of sources) lib.parse(source, r, { keepCase: true });
  r.resolveAll();
  return r;
}

/** The gRPC services filters and tracers call (authorization, rate limit, OTLP traces), with the types they use. */
const SERVICE_FILES = [
  'envoy/service/auth/v2.proto',
  'envoy/service/ratelimit/v2.proto',
  'opentelemetry/proto/collector/trace/v1/trace_service.proto',
];

let services: protobuf.Root | undefined;

/** The service messages' schema, parsed once. */
export function serviceRoot(): protobuf.Root {
  services ??= loadProtoRoot(SERVICE_FILES);
  return services;
}

/** A service message type by full name (with or without the leading dot). */
export function serviceMessageType(fullName: string): protobuf.Type {
  return serviceRoot().lookupType(fullName.startsWith('.') ? fullName : '.' + fullName);
}
