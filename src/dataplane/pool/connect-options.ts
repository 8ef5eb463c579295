import type { RawCluster } from '../../../events/config.js';
import { durationMs, numberOr, objectOf } from '../../../reducers/settings/values.js';
import { Report } from '../../bootstrap/report.js';
import type { UpstreamTls } from '../../tls/context.js';
import { NO_SECRETS, type Secrets } from '../../tls/secrets.js';
import { compileClusterTls } from '../../tls/upstream.js';
import { compileHttp2Options, type Http2Options } from '../http/h2-options.js';

/** Socket options of upstream connections that `ClusterSettings` does not carry. */
export interface ConnectOptions {
  /** `upstream_bind_config.source_address`; null: no bind. */
  localAddress: string | null;
  localPort: number;
  /** `upstream_connection_options.tcp_keepalive` set. */
  keepAlive: boolean;
  keepAliveInitialDelayMs: number;
  /** `common_http_protocol_options.idle_timeout`: a pooled connection unused this long closes (0: never). */
  idleTimeoutMs: number;
  /** The cluster's TLS context; null: plain text. */
  tls: UpstreamTls | null;
  /** `http2_protocol_options`: the SETTINGS and connection window of its HTTP/2 sessions. */
  http2: Http2Options;
}

const ONE_HOUR_MS = 3_600_000;

const NONE: ConnectOptions = {
  localAddress: null,
  localPort: 0,
  keepAlive: false,
  keepAliveInitialDelayMs: 0,
  idleTimeoutMs: ONE_HOUR_MS,
  tls: null,
  http2: { settings: {}, connectionWindowSize: null, streamErrorOnInvalidMessaging: false },
};
/** By the static secrets the TLS context may name, then by the cluster config. */
const caches = new WeakMap<Secrets, WeakMap<RawCluster, ConnectOptions>>();

/**
 * Reads the bind, keep-alive and TLS options of a cluster's config (memoised by identity).
 * `secrets` are the bootstrap's static secrets (src/tls/secrets.ts).
 * The TLS context compiles with the function validation ran on this config, so its findings
 * were reported there.
 */
export function connectOptionsOf(raw: RawCluster | undefined, secrets: Secrets = NO_SECRETS): ConnectOptions {
  if (!raw) return NONE;
  const cache = caches.get(secrets) ?? new WeakMap<RawCluster, ConnectOptions>();
  caches.set(secrets, cache);
  const hit = cache.get(raw);
  if (hit) return hit;
  const source = objectOf(objectOf(objectOf(raw.upstream_bind_config).source_address));
  const keepalive = objectOf(raw.upstream_connection_options).tcp_keepalive;
  const address = typeof source.address === 'string' && source.address !== '' ? source.address : null;
  const opts: ConnectOptions = {
    localAddress: address,
    localPort: numberOr(source.port_value, 0),
    keepAlive: keepalive !== undefined,
    keepAliveInitialDelayMs: numberOr(objectOf(keepalive).keepalive_time, 0) * 1000,
    idleTimeoutMs: Math.max(
      0,
      durationMs(objectOf(raw.common_http_protocol_options).idle_timeout, ONE_HOUR_MS),
    ),
    tls: compileClusterTls(raw, raw.name, new Report(raw.name), secrets),
    http2: compileHttp2Options(objectOf(raw.http2_protocol_options), raw.name, new Report(raw.name)),
  };
  cache.set(raw, opts);
  return opts;
}
