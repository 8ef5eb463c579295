/**
 * The extensions this build has, by category, with every spelling a bootstrap may use.
 * Categories are the reference's registry names; `--disable-extensions` takes
 * `<category>/<name>` with any spelling of the name (`envoy.` or `proxy.`, short or long).
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
  router: 'envoy.config.filter.http.router.v2.Router',
  healthCheck: 'envoy.config.filter.http.health_check.v2.HealthCheck',
  tap: 'envoy.config.filter.http.tap.v2alpha.Tap',
  cors: 'envoy.config.filter.http.cors.v2.Cors',
  csrf: 'envoy.config.filter.http.csrf.v2.CsrfPolicy',
  grpcHttp1Bridge: 'envoy.config.filter.http.grpc_http1_bridge.v2.Config',
  grpcWeb: 'envoy.config.filter.http.grpc_web.v2.GrpcWeb',
  fault: 'envoy.config.filter.http.fault.v2.HTTPFault',
  rbac: 'envoy.config.filter.http.rbac.v2.RBAC',
  extAuthz: 'envoy.config.filter.http.ext_authz.v2.ExtAuthz',
  networkRbac: 'envoy.config.filter.network.rbac.v2.RBAC',
  lua: 'envoy.config.filter.http.lua.v2.Lua',
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

/** Every extension of this build. */
export const EXTENSIONS: readonly Extension[] = [
  ext(
    'envoy.filters.network',
    'envoy.filters.network.http_connection_manager',
    ['envoy.http_connection_manager'],
    CONFIG_TYPE.httpConnectionManager,
  ),
  ext('envoy.filters.network', 'envoy.filters.network.tcp_proxy', ['envoy.tcp_proxy'], CONFIG_TYPE.tcpProxy),
  ext('envoy.filters.network', 'envoy.filters.network.rbac', [], CONFIG_TYPE.networkRbac),
  ext('envoy.filters.http', 'envoy.filters.http.router', ['envoy.router'], CONFIG_TYPE.router),
  ext(
    'envoy.filters.http',
    'envoy.filters.http.health_check',
    ['envoy.health_check'],
    CONFIG_TYPE.healthCheck,
  ),
  ext('envoy.filters.http', 'envoy.filters.http.tap', [], CONFIG_TYPE.tap),
  ext('envoy.filters.http', 'envoy.filters.http.cors', ['envoy.cors'], CONFIG_TYPE.cors),
  ext('envoy.filters.http', 'envoy.filters.http.csrf', ['envoy.csrf'], CONFIG_TYPE.csrf),
  ext(
    'envoy.filters.http',
    'envoy.filters.http.grpc_http1_bridge',
    ['envoy.grpc_http1_bridge'],
    CONFIG_TYPE.grpcHttp1Bridge,
  ),
  ext('envoy.filters.http', 'envoy.filters.http.grpc_web', ['envoy.grpc_web'], CONFIG_TYPE.grpcWeb),
  ext('envoy.filters.http', 'envoy.filters.http.fault', ['envoy.fault'], CONFIG_TYPE.fault),
  ext('envoy.filters.http', 'envoy.filters.http.rbac', [], CONFIG_TYPE.rbac),
  ext('envoy.filters.http', 'envoy.filters.http.ext_authz', ['envoy.ext_authz'], CONFIG_TYPE.extAuthz),
  ext('envoy.filters.http', 'envoy.filters.http.lua', ['envoy.lua'], CONFIG_TYPE.lua),
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
function envoyName(name: string): string {
  return name.startsWith('proxy.') ? 'envoy.' + name.slice('proxy.'.length) : name;
}

/** The extension a config names within a category, by any of its spellings. */
export function findExtension(category: ExtensionCategory, name: string): Extension | undefined {
  const wanted = envoyName(name);
  return EXTENSIONS.find((e) => e.category === category && e.aliases.includes(wanted));
}

/** The extension whose config message is `configType` within a category. */
export function extensionForType(category: ExtensionCategory, configType: string): Extension | undefined {
  return EXTENSIONS.find((e) => e.category === category && e.configType === configType);
}

/**
 * Resolves `--disable-extensions` entries (`<category>/<name>`) to extension identities
 * (`category/long-name`). Entries naming nothing this build has come back as warnings.
 */
export function disabledExtensions(entries: readonly string[]): {
  disabled: Set<string>;
  warnings: string[];
} {
  const disabled = new Set<string>();
  const warnings: string[] = [];
  for (const entry of entries) {
    const slash = entry.lastIndexOf('/');
    const category = envoyName(entry.slice(0, slash)) as ExtensionCategory;
    const found = slash > 0 ? findExtension(category, entry.slice(slash + 1)) : undefined;
    if (found) disabled.add(`${found.category}/${found.name}`);
    else
      warnings.push(
        `--disable-extensions: '${entry}' names no extension of this build ` +
          `(write <category>/<name>, e.g. envoy.filters.network/envoy.tcp_proxy)`,
      );
  }
  return { disabled, warnings };
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
