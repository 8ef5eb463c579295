/**
 * The v2 and v3 names of the config messages and fields this build reads: which v3 message
 * is which v2 one, and which fields v3 renamed. Plain data and pure functions, shared by the
 * loader (src/bootstrap/schema.ts), which reads v3 as v2, and the config dump view, which
 * shows a resource that came in as v3 as v3.
 */

/**
 * Type names other releases and this product's own spelling use for the same messages.
 * `proxy.` in place of `envoy.` is handled generically; these are the v3 names that a
 * bootstrap written for a later reference release carries in `@type`. The filters (HTTP,
 * network, listener) name theirs themselves (src/bootstrap/catalog.ts, which the loader reads first).
 */
const V3_ALIASES: Record<string, string> = {
  'envoy.extensions.transport_sockets.tls.v3.UpstreamTlsContext': 'envoy.api.v2.auth.UpstreamTlsContext',
  'envoy.extensions.transport_sockets.tls.v3.DownstreamTlsContext': 'envoy.api.v2.auth.DownstreamTlsContext',
  'envoy.extensions.transport_sockets.tls.v3.Secret': 'envoy.api.v2.auth.Secret',
  'envoy.extensions.transport_sockets.raw_buffer.v3.RawBuffer':
    'envoy.config.transport_socket.raw_buffer.v2.RawBuffer',
  'envoy.extensions.access_loggers.file.v3.FileAccessLog': 'envoy.config.accesslog.v2.FileAccessLog',
  'envoy.config.metrics.v3.HystrixSink': 'envoy.config.metrics.v2.HystrixSink',
  'envoy.config.metrics.v3.StatsdSink': 'envoy.config.metrics.v2.StatsdSink',
  'envoy.config.metrics.v3.DogStatsdSink': 'envoy.config.metrics.v2.DogStatsdSink',
  'envoy.config.metrics.v3.MetricsServiceConfig': 'envoy.config.metrics.v2.MetricsServiceConfig',
  'envoy.config.trace.v3.ZipkinConfig': 'envoy.config.trace.v2.ZipkinConfig',
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
  '.envoy.api.v2.Cluster': { ignore_health_on_host_removal: 'drain_connections_on_host_removal' },
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

/** `envoy.config.filter.<http|network|listener>.<filter>.v2[alpha].<Message>`. */
const FILTER_V2 = /^envoy\.config\.filter\.(http|network|listener)\.(\w+)\.v2(?:alpha)?\.(\w+)$/;

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
  // A filter's message, by the reference's rule for them (the filters name the rest themselves).
  const filter = FILTER_V2.exec(name);
  if (filter) return `envoy.extensions.filters.${filter[1]}.${filter[2]}.v3.${filter[3]}`;
  const moved = V3_PACKAGES.find(([v2]) => name.startsWith(v2));
  return moved ? moved[1] + name.slice(moved[0].length) : name;
}

/** The v2 message a v3 name of one names (the messages this build has), else the name itself. */
export function v2MessageName(name: string): string {
  return Object.hasOwn(V3_ALIASES, name) ? V3_ALIASES[name]! : name;
}

/** Whether a type URL names a v3 message (`envoy.extensions.*.v3.X`, `envoy.config.*.v3.X`). */
export function isV3TypeUrl(url: string): boolean {
  return /\.v3\.[A-Za-z0-9_]+$/.test(url.slice(url.lastIndexOf('/') + 1));
}
