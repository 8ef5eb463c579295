import type { WorkerMemory } from '../../../views/memory/render.js';
import type { ServerContext } from '../../context.js';
import { RecentLookups } from '../../stats/recent-lookups.js';
import type { StatsStore } from '../../stats/store.js';
import { type HostStatsByCluster, MergedStats, mergeHostStats, StatsTracker } from './stats-merge.js';

/** The merged store of a context, the primary's own tracker, and the update in flight. */
interface Merge {
  merged: MergedStats;
  own: StatsTracker;
  /** Updates run one after the other: each asks for deltas relative to what the last applied. */
  last: Promise<unknown>;
}

const merges = new WeakMap<ServerContext, Merge>();

/** Where a large merge lets the event loop run (the admin's other requests, `/ready`). */
const pause = () => new Promise<void>((resolve) => setImmediate(resolve));

/**
 * The stats the admin interface shows. In-process (`--concurrency 1`) that is `ctx.stats`
 * itself. With workers it is a merged copy (see `MergedStats`), the same store moved by
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
  if (!pool) return { stats: ctx.stats };
  let merge = merges.get(ctx);
  if (!merge) {
    merge = { merged: new MergedStats(), own: new StatsTracker(ctx.stats), last: Promise.resolve() };
    merges.set(ctx, merge);
  }
  const { merged, own } = merge;
  const update = merge.last.then(async () => {
    const since = merged.since();
    const answers = await pool.ask({ kind: 'stats', since, flush }, timeoutMs);
    await merged.apply(0, await own.dump(since[0], pause), pause);
    for (const { worker, delta } of answers) await merged.apply(worker, delta, pause);
    return { stats: merged.store };
  });
  merge.last = update.catch(() => {});
  return update;
}

/** The workers' per-host figures (`/clusters`, LRS) summed, or null in-process; a silent worker is left out. */
export async function collectWorkerHosts(
  ctx: ServerContext,
  timeoutMs = 1000,
): Promise<HostStatsByCluster | null> {
  const pool = ctx.workers?.started ? ctx.workers : null;
  return pool ? mergeHostStats(await pool.ask({ kind: 'hosts' }, timeoutMs)) : null;
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
