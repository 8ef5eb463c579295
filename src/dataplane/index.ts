/**
 * The data plane: listeners, their filter chains (HTTP connection manager, TCP proxy) and
 * the threads that run them.
 */

import type { ServerContext } from '../context-core.js';
import { createClusterManager } from '../upstream/cluster-manager.js';
import type { HealthEdges } from '../upstream/outcomes.js';
import { ListenerManager } from './listeners/manager.js';
import { clusterTraffic } from './pool/cluster-traffic.js';
import { drainPools } from './pool/index.js';
import { collectWorkerHosts } from './workers/collect.js';
import { PRIMARY_THREAD } from './workers/pool.js';

export { collectWorkerStats } from './workers/collect.js';
export type { HostStatsByCluster } from './workers/stats-merge.js';

/**
 * Starts serving traffic: resolves once the snapshot's listeners are bound (or failed), so
 * the server can go LIVE after it. The main thread serves (at `--concurrency 1` alone, with no
 * messages on the way); N > 1 starts N - 1 worker threads beside it, each binding every listener's address. Requests' outcomes
 * go to `health` (started with the other edges, in `src/edges/start.ts`); serving waits for
 * its first round of checks, as the reference warms a cluster before it serves.
 */
export async function startDataPlane(ctx: ServerContext, health: HealthEdges): Promise<void> {
  await health.firstRound;
  const clusters = await createClusterManager(ctx, {
    onHostsRemoved: drainPools,
    onOutcome: health.onOutcome,
    traffic: clusterTraffic,
  });
  ctx.onShutdown(() => clusters.close());
  ctx.figures.provide(async () => {
    const hosts = await collectWorkerHosts(ctx, clusters);
    // In-process the cluster manager's own host objects carry the traffic; with workers the
    // main thread's figures and the workers', summed, are the truth.
    return hosts
      ? {
          ...health.figures,
          hostStats: (cluster, address) => hosts[cluster]?.[address],
          createdHosts: (cluster) => Object.keys(hosts[cluster] ?? {}),
        }
      : {
          ...health.figures,
          hostStats: (cluster, address) => clusters.hostStats(cluster, address),
          createdHosts: (cluster) => clusters.createdHosts(cluster).map((h) => h.address),
        };
  });
  // The main thread serves as data-plane thread 0 in every case; with workers its listener
  // reports are folded with theirs and its port-0 listeners share their port.
  const pool = ctx.workers;
  if (pool) ctx.sockets.sharePorts(pool.ports);
  const listeners = pool
    ? new ListenerManager(
        ctx,
        clusters,
        { index: PRIMARY_THREAD, of: ctx.options.concurrency },
        (event, source) => pool.report(event, source),
      )
    : new ListenerManager(ctx, clusters);
  ctx.onShutdown(() => listeners.close());
  if (pool) ctx.onShutdown(() => pool.close());
  await Promise.all([listeners.start(), pool?.start({ onOutcomes: health.onOutcomes })]);
}
