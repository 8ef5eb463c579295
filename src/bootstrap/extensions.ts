/**
 * The extensions built into this module, by category, with every spelling a bootstrap may use.
 * The filters are not here: each names itself in its factory (src/dataplane/http/filters/,
 * src/dataplane/network-filters/, src/dataplane/listeners/filters/), and
 * src/bootstrap/catalog.ts joins their registries into the one the loader reads.
 */
export interface Extension {
  category: ExtensionCategory;
  /** The long `envoy.` name, used in messages and as the identity of the extension. */
  name: string;
  /** Every accepted name, `envoy.` spellings; `proxy.` variants are derived. */
  aliases: string[];
  /** Full name of the config message its `typed_config` holds. */
  configType: string;
  /** An HTTP filter's: the message of a route's override when it is not `configType` (`RBACPerRoute`). */
  perRouteType?: string;
}

/**
 * Where the loader finds an extension's config messages: files under `proto/`
 * (`envoy/config/filter/http/fault/v2.proto`; after the first, those of messages its config
 * carries in an `Any`, as the RBAC matcher's inputs), or proto3 source the extension carries itself
 * (types it uses from elsewhere named in full, `.envoy.api.v2.core.HeaderValue`): one text per
 * package, a text two extensions carry (the compression libraries) read once.
 */
export type ExtensionSchema = { file: string | readonly string[] } | { source: string | readonly string[] };

/**
 * What a filter extension says of itself so the loader can read its configs: its names, its
 * config messages by every full name the reference gives them, and where their schema is.
 */
export interface ExtensionIdentity {
  /** The long name (`envoy.filters.network.tcp_proxy`); `proxy.` spellings of every name are accepted too. */
  name: string;
  /** The other names the reference accepts (`envoy.tcp_proxy`). */
  aliases?: readonly string[];
  /** The config message this build reads (`typed_config`'s resolved `@type`), v2 where there is one. */
  configType: string;
  /**
   * Other full names of its messages, each read as the one given: the v3 (and v2alpha) names.
   * A `TypedStruct` (`udpa.type.v1`, `xds.type.v3`) naming any of them is read too.
   */
  typeAliases?: Readonly<Record<string, string>>;
  schema: ExtensionSchema;
  /**
   * An HTTP filter's: the message of a route's override (`per_filter_config`,
   * `typed_per_filter_config`) when it is not `configType` (`RBACPerRoute`).
   */
  perRouteType?: string;
}

export type ExtensionCategory =
  | 'envoy.filters.network'
  | 'envoy.filters.http'
  | 'envoy.filters.listener'
  | 'envoy.transport_sockets.upstream'
  | 'envoy.transport_sockets.downstream'
  | 'envoy.stats_sinks'
  | 'envoy.access_loggers'
  | 'envoy.tracers';

/** `@type` URLs of the configs the data plane reads, as the loader writes them. */
export const CONFIG_TYPE = {
  httpConnectionManager: 'envoy.config.filter.network.http_connection_manager.v2.HttpConnectionManager',
  upstreamTls: 'envoy.api.v2.auth.UpstreamTlsContext',
  downstreamTls: 'envoy.api.v2.auth.DownstreamTlsContext',
  rawBuffer: 'envoy.config.transport_socket.raw_buffer.v2.RawBuffer',
  hystrixSink: 'envoy.config.metrics.v2.HystrixSink',
  statsdSink: 'envoy.config.metrics.v2.StatsdSink',
  dogStatsdSink: 'envoy.config.metrics.v2.DogStatsdSink',
  metricsService: 'envoy.config.metrics.v2.MetricsServiceConfig',
  fileAccessLog: 'envoy.config.accesslog.v2.FileAccessLog',
  stdoutAccessLog: 'envoy.extensions.access_loggers.stream.v3.StdoutAccessLog',
  stderrAccessLog: 'envoy.extensions.access_loggers.stream.v3.StderrAccessLog',
  zipkin: 'envoy.config.trace.v2.ZipkinConfig',
  openTelemetry: 'envoy.config.trace.v3.OpenTelemetryConfig',
} as const;

const ext = (
  category: ExtensionCategory,
  name: string,
  aliases: string[],
  configType: string,
): Extension => ({
  category,
  name,
  aliases: [name, ...aliases],
  configType,
});

/** Every extension of this module but the filters. */
export const BUILT_IN_EXTENSIONS: readonly Extension[] = [
  ext('envoy.transport_sockets.upstream', 'envoy.transport_sockets.tls', ['tls'], CONFIG_TYPE.upstreamTls),
  ext(
    'envoy.transport_sockets.upstream',
    'envoy.transport_sockets.raw_buffer',
    ['raw_buffer'],
    CONFIG_TYPE.rawBuffer,
  ),
  ext(
    'envoy.transport_sockets.downstream',
    'envoy.transport_sockets.tls',
    ['tls'],
    CONFIG_TYPE.downstreamTls,
  ),
  ext(
    'envoy.transport_sockets.downstream',
    'envoy.transport_sockets.raw_buffer',
    ['raw_buffer'],
    CONFIG_TYPE.rawBuffer,
  ),
  ext('envoy.stats_sinks', 'envoy.stat_sinks.hystrix', ['envoy.hystrix'], CONFIG_TYPE.hystrixSink),
  ext('envoy.stats_sinks', 'envoy.stat_sinks.statsd', ['envoy.statsd'], CONFIG_TYPE.statsdSink),
  ext('envoy.stats_sinks', 'envoy.stat_sinks.dog_statsd', ['envoy.dog_statsd'], CONFIG_TYPE.dogStatsdSink),
  ext(
    'envoy.stats_sinks',
    'envoy.stat_sinks.metrics_service',
    ['envoy.metrics_service'],
    CONFIG_TYPE.metricsService,
  ),
  ext(
    'envoy.access_loggers',
    'envoy.access_loggers.file',
    ['envoy.file_access_log'],
    CONFIG_TYPE.fileAccessLog,
  ),
  ext('envoy.access_loggers', 'envoy.access_loggers.stdout', [], CONFIG_TYPE.stdoutAccessLog),
  ext('envoy.access_loggers', 'envoy.access_loggers.stderr', [], CONFIG_TYPE.stderrAccessLog),
  ext('envoy.tracers', 'envoy.tracers.zipkin', ['envoy.zipkin'], CONFIG_TYPE.zipkin),
  ext('envoy.tracers', 'envoy.tracers.opentelemetry', [], CONFIG_TYPE.openTelemetry),
];

/** `proxy.x` -> `envoy.x`; every other spelling unchanged. */
export function envoyName(name: string): string {
  return name.startsWith('proxy.') ? 'envoy.' + name.slice('proxy.'.length) : name;
}

/** Whether a config's `name` (any spelling, `proxy.` too) names the extension. */
export function answersTo(extension: { name: string; aliases?: readonly string[] }, name: string): boolean {
  const wanted = envoyName(name);
  return extension.name === wanted || (extension.aliases?.includes(wanted) ?? false);
}

/** A built-in extension by its config message (its display name); the loader uses catalog.ts. */
export function builtInForType(category: ExtensionCategory, configType: string): Extension | undefined {
  return BUILT_IN_EXTENSIONS.find((e) => e.category === category && e.configType === configType);
}

/**
 * The config message of a canonical extension entry (`{ name, typed_config }`): the loader
 * resolved every spelling of the name, or the `@type` alone, into `typed_config['@type']`,
 * so consumers pick an extension by this and never by name.
 */
export function configTypeOf(entry: { typed_config?: unknown }): string {
  const typed = entry.typed_config as { '@type'?: unknown } | undefined;
  const url = typeof typed?.['@type'] === 'string' ? typed['@type'] : '';
  return url.slice(url.lastIndexOf('/') + 1);
}
