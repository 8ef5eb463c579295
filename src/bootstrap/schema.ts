import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import protobuf from 'protobufjs';

/** The type URL prefix every `Any` written by this loader carries. */
export const TYPE_URL_PREFIX = 'type.googleapis.com/';

/** Full name (no leading dot) of the root message of a bootstrap file. */
export const BOOTSTRAP_TYPE = 'envoy.config.bootstrap.v2.Bootstrap';

/**
 * Files under `proto/` that, with their imports, define every message the loader knows.
 * The extension messages are listed because nothing in the bootstrap imports them (they
 * only ever arrive inside an `Any`).
 */
const ENTRY_FILES = [
  'envoy/config/bootstrap/v2.proto',
  'envoy/config/filter/network/http_connection_manager/v2.proto',
  'envoy/config/filter/network/tcp_proxy/v2.proto',
  'envoy/config/filter/http/router/v2.proto',
  'envoy/config/filter/http/health_check/v2.proto',
  'envoy/config/filter/http/tap/v2alpha.proto',
  'envoy/config/filter/http/cors/v2.proto',
  'envoy/config/filter/http/csrf/v2.proto',
  'envoy/config/filter/http/grpc_http1_bridge/v2.proto',
  'envoy/config/filter/http/grpc_web/v2.proto',
  'envoy/config/filter/http/fault/v2.proto',
  'envoy/config/filter/http/rbac/v2.proto',
  'envoy/admin/v2alpha.proto',
  'envoy/config/resource_monitor/fixed_heap/v2alpha.proto',
  'envoy/config/resource_monitor/injected_resource/v2alpha.proto',
  'envoy/config/filter/listener/original_dst/v2.proto',
  'envoy/config/filter/listener/tls_inspector/v2.proto',
  'envoy/config/transport_socket/raw_buffer/v2.proto',
  'envoy/config/accesslog/v2.proto',
  'envoy/extensions/access_loggers/stream/v3.proto',
  'envoy/extensions/upstreams/http/v3.proto',
  'envoy/api/v2/discovery.proto',
  'envoy/service/load_stats/v2.proto',
];

/**
 * Type names other releases and this product's own spelling use for the same messages.
 * `proxy.` in place of `envoy.` is handled generically; these are the v3 names that a
 * bootstrap written for a later reference release carries in `@type`.
 */
const V3_ALIASES: Record<string, string> = {
  'envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager':
    'envoy.config.filter.network.http_connection_manager.v2.HttpConnectionManager',
  'envoy.extensions.filters.network.tcp_proxy.v3.TcpProxy':
    'envoy.config.filter.network.tcp_proxy.v2.TcpProxy',
  'envoy.extensions.filters.http.router.v3.Router': 'envoy.config.filter.http.router.v2.Router',
  'envoy.extensions.filters.http.health_check.v3.HealthCheck':
    'envoy.config.filter.http.health_check.v2.HealthCheck',
  'envoy.extensions.filters.http.tap.v3.Tap': 'envoy.config.filter.http.tap.v2alpha.Tap',
  'envoy.extensions.filters.http.cors.v3.Cors': 'envoy.config.filter.http.cors.v2.Cors',
  'envoy.extensions.filters.http.csrf.v3.CsrfPolicy': 'envoy.config.filter.http.csrf.v2.CsrfPolicy',
  'envoy.extensions.filters.http.grpc_http1_bridge.v3.Config':
    'envoy.config.filter.http.grpc_http1_bridge.v2.Config',
  'envoy.extensions.filters.http.grpc_web.v3.GrpcWeb': 'envoy.config.filter.http.grpc_web.v2.GrpcWeb',
  'envoy.extensions.filters.http.fault.v3.HTTPFault': 'envoy.config.filter.http.fault.v2.HTTPFault',
  'envoy.extensions.filters.http.rbac.v3.RBAC': 'envoy.config.filter.http.rbac.v2.RBAC',
  'envoy.extensions.filters.http.rbac.v3.RBACPerRoute': 'envoy.config.filter.http.rbac.v2.RBACPerRoute',
  'envoy.extensions.filters.listener.original_dst.v3.OriginalDst':
    'envoy.config.filter.listener.original_dst.v2.OriginalDst',
  'envoy.extensions.filters.listener.tls_inspector.v3.TlsInspector':
    'envoy.config.filter.listener.tls_inspector.v2.TlsInspector',
  'envoy.extensions.transport_sockets.tls.v3.UpstreamTlsContext': 'envoy.api.v2.auth.UpstreamTlsContext',
  'envoy.extensions.transport_sockets.tls.v3.DownstreamTlsContext': 'envoy.api.v2.auth.DownstreamTlsContext',
  'envoy.extensions.transport_sockets.tls.v3.Secret': 'envoy.api.v2.auth.Secret',
  'envoy.extensions.transport_sockets.raw_buffer.v3.RawBuffer':
    'envoy.config.transport_socket.raw_buffer.v2.RawBuffer',
  'envoy.extensions.access_loggers.file.v3.FileAccessLog': 'envoy.config.accesslog.v2.FileAccessLog',
  'envoy.config.metrics.v3.HystrixSink': 'envoy.config.metrics.v2.HystrixSink',
  'envoy.extensions.resource_monitors.fixed_heap.v3.FixedHeapConfig':
    'envoy.config.resource_monitor.fixed_heap.v2alpha.FixedHeapConfig',
  'envoy.extensions.resource_monitors.injected_resource.v3.InjectedResourceConfig':
    'envoy.config.resource_monitor.injected_resource.v2alpha.InjectedResourceConfig',
  'envoy.config.route.v3.RouteConfiguration': 'envoy.api.v2.RouteConfiguration',
  'envoy.config.cluster.v3.Cluster': 'envoy.api.v2.Cluster',
  'envoy.config.listener.v3.Listener': 'envoy.api.v2.Listener',
  'envoy.config.endpoint.v3.ClusterLoadAssignment': 'envoy.api.v2.ClusterLoadAssignment',
};

/**
 * Fields v3 renamed, by the v2 message that holds them: the v3 spelling a v3 bootstrap or
 * resource writes, and the v2 field it is read as. Fields v3 added to a message this build
 * honours are in the v2 messages themselves, with v3's numbers (`proto/extras.md`).
 */
const V3_FIELD_NAMES: Record<string, Record<string, string>> = {
  '.envoy.api.v2.route.RouteAction': {
    host_rewrite_literal: 'host_rewrite',
    host_rewrite_header: 'auto_host_rewrite_header',
  },
};

/** The v2 field a v3 spelling `key` names in `type` (full name with the leading dot), if v3 renamed it. */
export function v2FieldName(typeName: string, key: string): string | undefined {
  const renamed = V3_FIELD_NAMES[typeName];
  return renamed && Object.hasOwn(renamed, key) ? renamed[key] : undefined;
}

/** The v3 spelling of a v2 field v3 renamed (`host_rewrite` -> `host_rewrite_literal`), if any. */
export function v3FieldName(typeName: string, field: string): string | undefined {
  const renamed = V3_FIELD_NAMES[typeName];
  return renamed ? Object.keys(renamed).find((k) => renamed[k] === field) : undefined;
}

/** v2 packages and the v3 packages their messages moved to, most specific first. */
const V3_PACKAGES: Array<[v2: string, v3: string]> = [
  ['envoy.api.v2.core.', 'envoy.config.core.v3.'],
  ['envoy.api.v2.route.', 'envoy.config.route.v3.'],
  ['envoy.api.v2.listener.', 'envoy.config.listener.v3.'],
  ['envoy.api.v2.endpoint.', 'envoy.config.endpoint.v3.'],
  ['envoy.api.v2.cluster.', 'envoy.config.cluster.v3.'],
  ['envoy.api.v2.auth.', 'envoy.extensions.transport_sockets.tls.v3.'],
  ['envoy.api.v2.Cluster', 'envoy.config.cluster.v3.Cluster'],
  ['envoy.api.v2.Listener', 'envoy.config.listener.v3.Listener'],
  ['envoy.api.v2.RouteConfiguration', 'envoy.config.route.v3.RouteConfiguration'],
  ['envoy.api.v2.ClusterLoadAssignment', 'envoy.config.endpoint.v3.ClusterLoadAssignment'],
  ['envoy.config.bootstrap.v2.', 'envoy.config.bootstrap.v3.'],
  ['envoy.config.filter.accesslog.v2.', 'envoy.config.accesslog.v3.'],
  ['envoy.config.accesslog.v2.', 'envoy.extensions.access_loggers.file.v3.'],
  [
    'envoy.config.filter.network.http_connection_manager.v2.',
    'envoy.extensions.filters.network.http_connection_manager.v3.',
  ],
  ['envoy.config.filter.network.tcp_proxy.v2.', 'envoy.extensions.filters.network.tcp_proxy.v3.'],
  ['envoy.config.metrics.v2.', 'envoy.config.metrics.v3.'],
  ['envoy.config.trace.v2.', 'envoy.config.trace.v3.'],
  ['envoy.type.matcher.', 'envoy.type.matcher.v3.'],
];

/**
 * The v3 name of a v2 message (full name, leading dot or not), for findings about a v3
 * resource; the v2 name when v3 did not move it or this table does not know where.
 */
export function v3MessageName(v2Name: string): string {
  const name = v2Name.startsWith('.') ? v2Name.slice(1) : v2Name;
  const aliased = Object.keys(V3_ALIASES).find((v3) => V3_ALIASES[v3] === name);
  if (aliased) return aliased;
  const moved = V3_PACKAGES.find(([v2]) => name.startsWith(v2));
  return moved ? moved[1] + name.slice(moved[0].length) : name;
}

/** Whether a type URL names a v3 message (`envoy.extensions.*.v3.X`, `envoy.config.*.v3.X`). */
export function isV3TypeUrl(url: string): boolean {
  return /\.v3\.[A-Za-z0-9_]+$/.test(url.slice(url.lastIndexOf('/') + 1));
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

let root: protobuf.Root | undefined;

/** The reflected schema, parsed once from `proto/` with field names kept as written. */
export function schemaRoot(): protobuf.Root {
  if (root) return root;
  const base = protoDir();
  const r = new protobuf.Root();
  // protobufjs bundles google/protobuf/*; google/rpc/status.proto is kept under proto/.
  r.resolvePath = (_origin, target) =>
    target.startsWith('google/protobuf/') ? target : path.join(base, target);
  r.loadSync(ENTRY_FILES, { keepCase: true });
  r.resolveAll();
  root = r;
  return r;
}

/** A message type by full name (with or without the leading dot). */
export function messageType(fullName: string): protobuf.Type {
  return schemaRoot().lookupType(fullName.startsWith('.') ? fullName : '.' + fullName);
}

/** The name a type URL names once aliases are applied: `proxy.` read as `envoy.`, v3 read as v2. */
export function canonicalTypeName(url: string): string {
  let name = url.slice(url.lastIndexOf('/') + 1);
  if (name.startsWith('proxy.')) name = 'envoy.' + name.slice('proxy.'.length);
  return Object.hasOwn(V3_ALIASES, name) ? V3_ALIASES[name]! : name;
}

/** The message a type URL names, or undefined when this build has no such message. */
export function typeForUrl(url: string): protobuf.Type | undefined {
  const found = schemaRoot().lookup('.' + canonicalTypeName(url));
  return found instanceof protobuf.Type ? found : undefined;
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
