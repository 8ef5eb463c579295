import type { WorkerMemory } from '../../../views/memory/render.js';
import type { ServerContext } from '../../context.js';
import { RecentLookups } from '../../stats/recent-lookups.js';
import { StatsStore } from '../../stats/store.js';
import { type HostStatsByCluster, mergeHostStats, mergeStats } from './stats-merge.js';

/** The merged store of each context, merged into again per request (see `mergeStats`). */
const mergedStores = new WeakMap<ServerContext, StatsStore>();

/**
 * The stats the admin interface shows. In-process (`--concurrency 1`) that is `ctx.stats`
 * itself and `hosts` is null (read the cluster manager's own host objects). With workers
 * it is a merged copy (see `mergeStats`), the same store updated in place each time so that
 * its sort and Prometheus identities are cached as in-process, and `hosts` holds the
 * workers' per-host figures summed; a worker that does not answer within `timeoutMs` is left out.
 */
export async function collectWorkerStats(
  ctx: ServerContext,
  timeoutMs = 1000,
): Promise<{ stats: StatsStore; hosts: HostStatsByCluster | null }> {
  const pool = ctx.workers?.started ? ctx.workers : null;
  if (!pool) return { stats: ctx.stats, hosts: null };
  const dumps = await pool.ask({ kind: 'stats' }, timeoutMs);
  let merged = mergedStores.get(ctx);
  if (!merged) {
    merged = new StatsStore();
    mergedStores.set(ctx, merged);
  }
  return { stats: mergeStats(ctx.stats, dumps, merged), hosts: mergeHostStats(dumps) };
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
