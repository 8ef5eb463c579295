/**
 * The data plane: listeners, their filter chains (HTTP connection manager, TCP proxy) and
 * the processes that run them.
 */

import { provideClusterFigures } from '../admin/figures.js';
import type { ServerContext } from '../server/context.js';
import { createClusterManager } from '../upstream/cluster-manager.js';
import { ListenerManager } from './listeners/manager.js';
import { drainPools } from './pool/index.js';
import { WorkerPool } from './workers/pool.js';
import { collectWorkerStats } from './workers/stats-merge.js';

export { collectWorkerStats, type HostStatsByCluster } from './workers/stats-merge.js';

/**
 * Starts serving traffic: resolves once the snapshot's listeners are bound (or failed), so
 * the server can go LIVE after it. `--concurrency 1` runs everything in this process (no
 * IPC on the way); N > 1 forks N workers that share the listening sockets.
 */
export async function startDataPlane(ctx: ServerContext): Promise<void> {
  if (!ctx.clusters) {
    const clusters = await createClusterManager(ctx, { onHostsRemoved: drainPools });
    ctx.clusters = clusters;
    ctx.onShutdown(() => clusters.close());
  }
  const clusters = ctx.clusters;
  provideClusterFigures(ctx, async () => {
    const { hosts } = await collectWorkerStats(ctx);
    // In-process the cluster manager's own host objects carry the traffic; with workers they
    // carry none and the workers' figures, summed, are the truth.
    return hosts
      ? { hostStats: (cluster, address) => hosts[cluster]?.[address] }
      : { hostStats: (cluster, address) => clusters.hostStats(cluster, address) };
  });
  if (ctx.options.concurrency <= 1) {
    const listeners = new ListenerManager(ctx, ctx.clusters);
    ctx.onShutdown(() => listeners.close());
    await listeners.start();
  } else {
    const pool = new WorkerPool(ctx, ctx.options.concurrency);
    ctx.onShutdown(() => pool.close());
    await pool.start();
  }
}
