import type { ClusterRuntime, UpstreamHost } from '../../upstream/types.js';
import { H1Pool } from './h1-pool.js';
import { H2Pool } from './h2-pool.js';
import type { ConnectionPool, PoolContext } from './types.js';

/** The two pools a host may need: HTTP/2 is chosen per request (`USE_DOWNSTREAM_PROTOCOL`). */
interface HostPools {
  h1: H1Pool | null;
  h2: H2Pool | null;
}

/**
 * The pool for a request to `host`: HTTP/2 when the cluster sets `http2_protocol_options`,
 * or when `protocol_selection` is `USE_DOWNSTREAM_PROTOCOL` and the downstream is HTTP/2;
 * HTTP/1.1 otherwise. Pools live on `UpstreamHost.pool`, so they survive cluster rebuilds.
 */
export function poolFor(pc: PoolContext, downstreamHttp2: boolean): ConnectionPool {
  const host = pc.host;
  let pools = host.pool as HostPools | null | undefined;
  if (!pools) {
    pools = { h1: null, h2: null };
    host.pool = pools;
  }
  const settings = pc.cluster.settings;
  const h2 = settings.protocolSelection === 'USE_DOWNSTREAM_PROTOCOL' ? downstreamHttp2 : settings.http2;
  if (h2) {
    pools.h2 ??= new H2Pool(pc);
    return pools.h2;
  }
  pools.h1 ??= new H1Pool(pc);
  return pools.h1;
}

/**
 * Lets the pools of hosts that left their cluster finish what they carry: idle
 * connections close now, busy ones after their request.
 */
export function drainPools(hosts: readonly UpstreamHost[]): void {
  for (const host of hosts) {
    const pools = host.pool as HostPools | null | undefined;
    pools?.h1?.drain();
    pools?.h2?.drain();
    host.pool = null;
  }
}

/** Closes the pools of hosts at once (shutdown). */
export function destroyPools(cluster: ClusterRuntime | { hosts: readonly UpstreamHost[] }): void {
  for (const host of cluster.hosts) {
    const pools = host.pool as HostPools | null | undefined;
    pools?.h1?.destroy();
    pools?.h2?.destroy();
    host.pool = null;
  }
}
