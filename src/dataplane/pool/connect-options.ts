import type { RawCluster } from '../../../events/config.js';
import { compiledCluster, type UpstreamConnection } from '../../config/cluster.js';
import { clusterTls } from '../../config/cluster-tls.js';
import { NO_SECRETS, type Secrets } from '../../config/secrets.js';
import type { UpstreamTls } from '../../config/tls-context.js';
import { DEFAULT_FLOOD_LIMITS } from '../codec/h2/limits.js';

/** How to open a cluster's upstream connections: its compiled socket options and TLS context. */
export interface ConnectOptions extends UpstreamConnection {
  /** The cluster's TLS context; null: plain text. */
  tls: UpstreamTls | null;
}

const NONE: ConnectOptions = {
  localAddress: null,
  localPort: 0,
  keepAlive: false,
  keepAliveInitialDelayMs: 0,
  idleTimeoutMs: 3_600_000,
  tls: null,
  http2: {
    settings: {},
    connectionWindowSize: null,
    streamErrorOnInvalidMessaging: false,
    limits: DEFAULT_FLOOD_LIMITS,
    keepalive: null,
  },
};
/** By the static secrets the TLS context may name, then by the cluster config. */
const caches = new WeakMap<Secrets, WeakMap<RawCluster, ConnectOptions>>();

/**
 * A cluster's compiled connection options with its TLS context for `secrets`, the bootstrap's
 * static secrets and SDS's (src/config/secrets.ts); memoised by both identities.
 */
export function connectOptionsOf(raw: RawCluster | undefined, secrets: Secrets = NO_SECRETS): ConnectOptions {
  if (!raw) return NONE;
  const cache = caches.get(secrets) ?? new WeakMap<RawCluster, ConnectOptions>();
  caches.set(secrets, cache);
  const hit = cache.get(raw);
  if (hit) return hit;
  const opts: ConnectOptions = { ...compiledCluster(raw).connection, tls: clusterTls(raw, secrets).tls };
  cache.set(raw, opts);
  return opts;
}
