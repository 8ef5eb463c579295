/**
 * The extensions built into this module, by category, with every spelling a bootstrap may use.
 * The HTTP filters are not here: each names itself in its factory (src/dataplane/http/filters/),
 * and src/bootstrap/catalog.ts joins both into the registry the loader reads.
 */
export interface Extension {
  category: ExtensionCategory;
  /** The long `envoy.` name, used in messages and as the identity of the extension. */
  name: string;
  /** Every accepted name, `envoy.` spellings; `proxy.` variants are derived. */
  aliases: string[];
  /** Full name of the config message its `typed_config` holds. */
  configType: string;
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
  tcpProxy: 'envoy.config.filter.network.tcp_proxy.v2.TcpProxy',
  networkRbac: 'envoy.config.filter.network.rbac.v2.RBAC',
  originalDst: 'envoy.config.filter.listener.original_dst.v2.OriginalDst',
  tlsInspector: 'envoy.config.filter.listener.tls_inspector.v2.TlsInspector',
  upstreamTls: 'envoy.api.v2.auth.UpstreamTlsContext',
  downstreamTls: 'envoy.api.v2.auth.DownstreamTlsContext',
  rawBuffer: 'envoy.config.transport_socket.raw_buffer.v2.RawBuffer',
  hystrixSink: 'envoy.config.metrics.v2.HystrixSink',
  fileAccessLog: 'envoy.config.accesslog.v2.FileAccessLog',
  stdoutAccessLog: 'envoy.extensions.access_loggers.stream.v3.StdoutAccessLog',
  stderrAccessLog: 'envoy.extensions.access_loggers.stream.v3.StderrAccessLog',
  zipkin: 'envoy.config.trace.v2.ZipkinConfig',
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

/** Every extension of this module (all but the HTTP filters). */
export const BUILT_IN_EXTENSIONS: readonly Extension[] = [
  ext(
    'envoy.filters.network',
    'envoy.filters.network.http_connection_manager',
    ['envoy.http_connection_manager'],
    CONFIG_TYPE.httpConnectionManager,
  ),
  ext('envoy.filters.network', 'envoy.filters.network.tcp_proxy', ['envoy.tcp_proxy'], CONFIG_TYPE.tcpProxy),
  ext('envoy.filters.network', 'envoy.filters.network.rbac', [], CONFIG_TYPE.networkRbac),
  ext(
    'envoy.filters.listener',
    'envoy.filters.listener.original_dst',
    ['envoy.listener.original_dst'],
    CONFIG_TYPE.originalDst,
  ),
  ext(
    'envoy.filters.listener',
    'envoy.filters.listener.tls_inspector',
    ['envoy.listener.tls_inspector'],
    CONFIG_TYPE.tlsInspector,
  ),
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
  ext(
    'envoy.access_loggers',
    'envoy.access_loggers.file',
    ['envoy.file_access_log'],
    CONFIG_TYPE.fileAccessLog,
  ),
  ext('envoy.access_loggers', 'envoy.access_loggers.stdout', [], CONFIG_TYPE.stdoutAccessLog),
  ext('envoy.access_loggers', 'envoy.access_loggers.stderr', [], CONFIG_TYPE.stderrAccessLog),
  ext('envoy.tracers', 'envoy.tracers.zipkin', ['envoy.zipkin'], CONFIG_TYPE.zipkin),
];

/** `proxy.x` -> `envoy.x`; every other spelling unchanged. */
export function envoyName(name: string): string {
  return name.startsWith('proxy.') ? 'envoy.' + name.slice('proxy.'.length) : name;
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
