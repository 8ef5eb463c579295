import type { WorkerMemory } from '../../../views/memory/render.js';
import type { ServerContext } from '../../context-core.js';
import { RecentLookups } from '../../stats/recent-lookups.js';
import type { StatsStore } from '../../stats/store.js';
import type { ClusterManager } from '../../upstream/cluster-manager.js';
import { threadHostStats } from './host-stats.js';
import { type HostStatsByCluster, mergeHostStats } from './stats-merge.js';

/** Where a large merge lets the event loop run (the admin's other requests, `/ready`). */
const pause = () => new Promise<void>((resolve) => setImmediate(resolve));

/**
 * The stats the admin interface shows. In-process (`--concurrency 1`) that is `ctx.stats`
 * itself. With workers it is the merged copy `ctx.workerStats` (`WorkerStatsMerge`), moved by
 * each thread's changes since the last request (its sort and Prometheus identities stay
 * cached as in-process), applied in steps that yield to the event loop; a worker that does
 * not answer within `timeoutMs` counts with the figures it last sent. With `flush` (the
 * primary's stats flush) each worker closes its histograms' interval windows before it answers.
 */
export async function collectWorkerStats(
  ctx: ServerContext,
  timeoutMs = 1000,
  flush = false,
): Promise<{ stats: StatsStore }> {
  const pool = ctx.workers?.started ? ctx.workers : null;
  if (!pool || !ctx.workerStats) return { stats: ctx.stats };
  const stats = await ctx.workerStats.update(
    (since) => pool.ask({ kind: 'stats', since, flush }, timeoutMs),
    pause,
  );
  return { stats };
}

/**
 * The per-host figures (`/clusters`, LRS) of the main thread's `own` cluster manager and of
 * every worker, summed, or null in-process; a worker silent for `timeoutMs` counts with the
 * figures it last sent, as `/stats` does.
 */
export async function collectWorkerHosts(
  ctx: ServerContext,
  own: ClusterManager<unknown>,
  timeoutMs = 1000,
): Promise<HostStatsByCluster | null> {
  const pool = ctx.workers?.started ? ctx.workers : null;
  if (!pool) return null;
  const answers = await pool.ask({ kind: 'hosts' }, timeoutMs, true);
  return mergeHostStats([threadHostStats(ctx.store.state, own), ...answers]);
}

/**
 * The recent lookups `/stats/recentlookups` shows: the primary's own, plus (with workers,
 * where the data plane looks names up) every worker's added in; a worker that does not
 * answer within `timeoutMs` is left out.
 */
export async function collectRecentLookups(ctx: ServerContext, timeoutMs = 1000): Promise<RecentLookups> {
  const pool = ctx.workers?.started ? ctx.workers : null;
  if (!pool) return ctx.stats.recentLookups;
  const out = new RecentLookups();
  out.absorb(ctx.stats.recentLookups.dump());
  for (const part of await pool.ask({ kind: 'recent-lookups' }, timeoutMs)) out.absorb(part);
  return out;
}

/** Each worker's `/memory` figures (none in-process); a worker that does not answer within `timeoutMs` is left out. */
export async function collectWorkerMemory(ctx: ServerContext, timeoutMs = 1000): Promise<WorkerMemory[]> {
  const pool = ctx.workers?.started ? ctx.workers : null;
  return pool ? pool.ask({ kind: 'memory' }, timeoutMs) : [];
}
