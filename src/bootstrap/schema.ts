import type protobuf from 'protobufjs';
import { v2MessageName } from '../../reducers/settings/api-names.js';
import { EXTENSION_SCHEMAS, EXTENSION_TYPE_ALIASES } from './catalog.js';
import { loadProtoRoot, protobufjs } from './proto-root.js';

export {
  isV3TypeUrl,
  v2FieldName,
  v3FieldName,
  v3MessageName,
} from '../../reducers/settings/api-names.js';

/** The type URL prefix every `Any` written by this loader carries. */
export const TYPE_URL_PREFIX = 'type.googleapis.com/';

/** Full name (no leading dot) of the root message of a bootstrap file. */
export const BOOTSTRAP_TYPE = 'envoy.config.bootstrap.v2.Bootstrap';

/**
 * Files under `proto/` that, with their imports, define every message the loader knows,
 * with the filters' own (src/bootstrap/catalog.ts). The extension messages are listed
 * because nothing in the bootstrap imports them (they only ever arrive inside an `Any`).
 */
const ENTRY_FILES = [
  'envoy/config/bootstrap/v2.proto',
  'envoy/admin/v2alpha.proto',
  'envoy/config/resource_monitor/fixed_heap/v2alpha.proto',
  'envoy/config/resource_monitor/injected_resource/v2alpha.proto',
  'envoy/config/transport_socket/raw_buffer/v2.proto',
  'envoy/config/accesslog/v2.proto',
  'envoy/config/trace/v3.proto',
  'envoy/extensions/tracers/opentelemetry/resource_detectors/v3.proto',
  'envoy/extensions/tracers/opentelemetry/samplers/v3.proto',
  'envoy/extensions/access_loggers/stream/v3.proto',
  'envoy/extensions/upstreams/http/v3.proto',
  'envoy/api/v2/discovery.proto',
  'envoy/service/load_stats/v2.proto',
  'envoy/service/metrics/v2.proto',
  // What meshes' generated bootstraps name (docs/bootstrap.md#service-mesh-bootstraps).
  'envoy/extensions/bootstrap/internal_listener/v3.proto',
  'envoy/extensions/regex_engines/v3.proto',
  'envoy/extensions/resource_monitors/downstream_connections/v3.proto',
  ...['least_request', 'round_robin', 'random', 'ring_hash', 'maglev'].map(
    (policy) => `envoy/extensions/load_balancing_policies/${policy}/v3.proto`,
  ),
];

let root: protobuf.Root | undefined;

/** The reflected schema, parsed once from `proto/` with field names kept as written. */
export function schemaRoot(): protobuf.Root {
  root ??= loadProtoRoot([...ENTRY_FILES, ...EXTENSION_SCHEMAS.files], EXTENSION_SCHEMAS.sources);
  return root;
}

/** A message type by full name (with or without the leading dot). */
export function messageType(fullName: string): protobuf.Type {
  return schemaRoot().lookupType(fullName.startsWith('.') ? fullName : '.' + fullName);
}

/** The name a type URL names once aliases are applied: `proxy.` read as `envoy.`, v3 read as v2. */
export function canonicalTypeName(url: string): string {
  let name = url.slice(url.lastIndexOf('/') + 1);
  if (name.startsWith('proxy.')) name = 'envoy.' + name.slice('proxy.'.length);
  return EXTENSION_TYPE_ALIASES.get(name) ?? v2MessageName(name);
}

/** The message a type URL names, or undefined when this build has no such message. */
export function typeForUrl(url: string): protobuf.Type | undefined {
  const found = schemaRoot().lookup('.' + canonicalTypeName(url));
  return found instanceof protobufjs().Type ? found : undefined;
}

const names = new WeakMap<protobuf.ReflectionObject, string>();

/**
 * `fullName` of a reflected type, memoised: protobufjs recomputes it from the parent chain
 * on every read, which dominated the walk of large bootstraps.
 */
export function nameOf(object: protobuf.ReflectionObject): string {
  let name = names.get(object);
  if (name === undefined) {
    name = object.fullName;
    names.set(object, name);
  }
  return name;
}

/** The `@type` this loader writes for a message. */
export function typeUrlOf(type: protobuf.Type): string {
  return TYPE_URL_PREFIX + nameOf(type).slice(1);
}
