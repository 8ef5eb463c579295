import type { StatsStore } from '../../stats/store.js';
import type { HostStats } from '../../upstream/types.js';
import { MergedStats } from './merged-stats.js';
import { type DeltaBase, type StatsDelta, StatsTracker } from './stats-delta.js';

/** Per-host figures by cluster name, then host address (`ip:port`). */
export type HostStatsByCluster = Record<string, Record<string, HostStats>>;

/** The per-host figures of every worker, added up. */
export function mergeHostStats(parts: readonly HostStatsByCluster[]): HostStatsByCluster {
  const out: HostStatsByCluster = {};
  for (const part of parts) {
    for (const [cluster, hosts] of Object.entries(part)) {
      const byHost = out[cluster] ?? {};
      out[cluster] = byHost;
      for (const [address, stats] of Object.entries(hosts)) {
        const into = byHost[address];
        if (!into) {
          byHost[address] = { ...stats };
          continue;
        }
        for (const key of Object.keys(stats) as Array<keyof HostStats>) into[key] += stats[key];
      }
    }
  }
  return out;
}

/**
 * The stats the primary's admin shows with --concurrency > 1: one merged store moved by each
 * thread's changes since the last update. A named field of the primary's context
 * (`ServerContext.workerStats`, made by `createContext`); `collectWorkerStats` drives it.
 */
export class WorkerStatsMerge {
  private readonly merged = new MergedStats();
  /** The primary's own stats (the admin's, the edges'), thread 0 of the merge. */
  private readonly own: StatsTracker;
  /** Updates run one after the other: each asks for deltas relative to what the last applied. */
  private last: Promise<unknown> = Promise.resolve();

  constructor(own: StatsStore) {
    this.own = new StatsTracker(own);
  }

  /**
   * Applies the primary's changes and the workers' answers to `ask(since)`, yielding through
   * `pause` between steps; resolves to the merged store.
   */
  update(
    ask: (since: Record<number, DeltaBase>) => Promise<Array<{ worker: number; delta: StatsDelta }>>,
    pause: () => Promise<void>,
  ): Promise<StatsStore> {
    const update = this.last.then(async () => {
      const since = this.merged.since();
      const answers = await ask(since);
      await this.merged.apply(0, await this.own.dump(since[0], pause), pause);
      for (const { worker, delta } of answers) await this.merged.apply(worker, delta, pause);
      return this.merged.store;
    });
    this.last = update.catch(() => {});
    return update;
  }
}
