import type { RawCluster } from '../../../events/config.js';
import { durationMs, numberOr, objectOf } from '../../../reducers/settings/values.js';

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
}

const ONE_HOUR_MS = 3_600_000;

const NONE: ConnectOptions = {
  localAddress: null,
  localPort: 0,
  keepAlive: false,
  keepAliveInitialDelayMs: 0,
  idleTimeoutMs: ONE_HOUR_MS,
};
const cache = new WeakMap<RawCluster, ConnectOptions>();

/** Reads the bind and keep-alive options of a cluster's config (memoised by identity). */
export function connectOptionsOf(raw: RawCluster | undefined): ConnectOptions {
  if (!raw) return NONE;
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
  };
  cache.set(raw, opts);
  return opts;
}
