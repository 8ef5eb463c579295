import { randomUUID } from 'node:crypto';
import { RECENT_LOOKUPS_GAUGE } from '../../stats/server-stats.js';
import {
  Counter,
  Gauge,
  type GaugeImportMode,
  Histogram,
  type HistogramUnit,
  type HistogramWindow,
  StatsStore,
  TextReadout,
} from '../../stats/store.js';
import type { HostStats } from '../../upstream/types.js';

interface WindowDump {
  bins: Array<[number, number]>;
  count: number;
  sum: number;
}

/** The last answer of a source the primary applied: the source's token and sequence number. */
export interface DeltaBase {
  token: string;
  seq: number;
}

/**
 * A thread's stats as plain data for its message port, relative to its previous answer: the
 * stats created since (name and kind, once) and the figures that moved, stats named by their
 * position in the source's creation order (a store never removes a stat). `base` is the
 * sequence number it applies on top of; null makes it a full dump, applied from nothing.
 */
export interface StatsDelta {
  /** Names the source process and its tracker: a restarted worker has another one. */
  token: string;
  seq: number;
  base: number | null;
  newCounters: string[];
  newGauges: Array<[string, GaugeImportMode]>;
  newHistograms: Array<[string, HistogramUnit]>;
  newTextReadouts: string[];
  /** Flat: index, value, reset base, used (0 or 1), per counter that moved. */
  counters: number[];
  /** Flat: index, value, used (0 or 1), per gauge that moved. */
  gauges: number[];
  /** Index, used, interval window, cumulative window, per histogram that moved. */
  histograms: Array<[number, boolean, WindowDump | null, WindowDump | null]>;
  textReadouts: Array<[number, string, boolean]>;
  /** Stat names this process looked up by string (its part of `server.stats_recent_lookups`). */
  lookups: number;
}

/** Per-host figures by cluster name, then host address (`ip:port`). */
export type HostStatsByCluster = Record<string, Record<string, HostStats>>;

/** How many stats a dump looks at, or figures a merge changes, between two pause points. */
const STEP = 4096;

const windowDump = (w: HistogramWindow | null): WindowDump | null =>
  w && { bins: [...w.bins], count: w.count, sum: w.sum };

/**
 * The source side: what of a store moved since the last dump it made. It keeps the figures
 * it last sent; a dump asked relative to anything else (a lost or duplicated answer, a
 * primary that never saw this tracker) is a full one.
 */
export class StatsTracker {
  private readonly token = randomUUID();
  private seq = 0;
  private readonly counters: number[] = [];
  private readonly gauges: number[] = [];
  private readonly histograms: Array<{ interval: HistogramWindow | null; recorded: number; used: boolean }> =
    [];
  private readonly texts: Array<{ value: string; used: boolean }> = [];
  private last: Promise<unknown> = Promise.resolve();

  constructor(private readonly store: StatsStore) {}

  /**
   * What moved since the dump `since` names (everything when it names another one).
   * `pause` is awaited every few thousand stats, so a large store does not hold the event
   * loop (a worker's data plane, the primary's admin): a stat that moves during the pause
   * goes in this dump or the next one, as its figures are recorded as sent.
   */
  dump(since: DeltaBase | null | undefined, pause: () => Promise<void>): Promise<StatsDelta> {
    // One dump at a time: each records what it sent for the next one to compare with.
    const dump = this.last.then(() => this.scan(since, pause));
    this.last = dump.catch(() => {});
    return dump;
  }

  private async scan(since: DeltaBase | null | undefined, pause: () => Promise<void>): Promise<StatsDelta> {
    const full = since?.token !== this.token || since.seq !== this.seq;
    if (full) {
      this.counters.length = 0;
      this.gauges.length = 0;
      this.histograms.length = 0;
      this.texts.length = 0;
    }
    this.seq += 1;
    const out: StatsDelta = {
      token: this.token,
      seq: this.seq,
      base: full ? null : this.seq - 1,
      newCounters: [],
      newGauges: [],
      newHistograms: [],
      newTextReadouts: [],
      counters: [],
      gauges: [],
      histograms: [],
      textReadouts: [],
      lookups: this.store.recentLookups.total,
    };
    // Three numbers per counter (value, reset base, used): a new stat starts at zero on both sides.
    const cs = this.counters;
    let i = 0;
    for (const c of this.store.counters.values()) {
      const at = i * 3;
      if (at === cs.length) {
        out.newCounters.push(c.name);
        cs.push(0, 0, 0);
      }
      const used = c.used ? 1 : 0;
      if (c.value !== cs[at] || c.resetBase !== cs[at + 1] || used !== cs[at + 2]) {
        out.counters.push(i, c.value, c.resetBase, used);
        cs[at] = c.value;
        cs[at + 1] = c.resetBase;
        cs[at + 2] = used;
      }
      i += 1;
      if (i % STEP === 0) await pause();
    }
    const gs = this.gauges;
    i = 0;
    for (const g of this.store.gauges.values()) {
      const at = i * 2;
      if (at === gs.length) {
        out.newGauges.push([g.name, g.importMode]);
        gs.push(0, 0);
      }
      const used = g.used ? 1 : 0;
      if (g.value !== gs[at] || used !== gs[at + 1]) {
        out.gauges.push(i, g.value, used);
        gs[at] = g.value;
        gs[at + 1] = used;
      }
      i += 1;
      if (i % STEP === 0) await pause();
    }
    i = 0;
    for (const h of this.store.histograms.values()) {
      let last = this.histograms[i];
      if (!last) {
        out.newHistograms.push([h.name, h.unit]);
        last = { interval: null, recorded: 0, used: false };
        this.histograms.push(last);
      }
      if (h.interval !== last.interval || h.recorded !== last.recorded || h.used !== last.used) {
        out.histograms.push([i, h.used, windowDump(h.interval), windowDump(h.cumulativeWindow())]);
        last.interval = h.interval;
        last.recorded = h.recorded;
        last.used = h.used;
      }
      i += 1;
      if (i % STEP === 0) await pause();
    }
    i = 0;
    for (const t of this.store.textReadouts.values()) {
      let last = this.texts[i];
      if (!last) {
        out.newTextReadouts.push(t.name);
        last = { value: '', used: false };
        this.texts.push(last);
      }
      if (t.value !== last.value || t.used !== last.used) {
        out.textReadouts.push([i, t.value, t.used]);
        last.value = t.value;
        last.used = t.used;
      }
      i += 1;
      if (i % STEP === 0) await pause();
    }
    return out;
  }
}

function addWindow(
  into: HistogramWindow | null,
  from: WindowDump | HistogramWindow | null,
): HistogramWindow | null {
  if (!from) return into;
  const out: HistogramWindow = into ?? { bins: new Map(), count: 0, sum: 0 };
  for (const [k, n] of from.bins as Iterable<[number, number]>) out.bins.set(k, (out.bins.get(k) ?? 0) + n);
  out.count += from.count;
  out.sum += from.sum;
  return out;
}

/** The part of one source (by rank) in a merged stat given by the lowest rank that has one. */
type Parts<T> = Map<number, T>;

/** The lowest rank's part: the primary's (rank 0), else the first worker's. */
function first<T>(parts: Parts<T>): T | undefined {
  let best = Number.POSITIVE_INFINITY;
  for (const rank of parts.keys()) if (rank < best) best = rank;
  return parts.get(best);
}

/** A merged stat is used when any source used it: how many do. */
class MergedCounter extends Counter {
  usedBy = 0;
}

class MergedGauge extends Gauge {
  usedBy = 0;
  /** Values of a `NeverImport` gauge by source: they describe shared state, so one wins. */
  readonly parts: Parts<number> | null = this.importMode === 'NeverImport' ? new Map() : null;
}

/** A histogram assembled from several processes' windows; read-only by intent. */
class MergedHistogram extends Histogram {
  usedBy = 0;
  cumulative: HistogramWindow | null = null;
  readonly parts: Parts<{ interval: WindowDump | null; cumulative: WindowDump | null }> = new Map();
  override cumulativeWindow(): HistogramWindow | null {
    return this.cumulative;
  }
  sumParts(): void {
    this.interval = null;
    this.cumulative = null;
    for (const rank of [...this.parts.keys()].sort((a, b) => a - b)) {
      const part = this.parts.get(rank);
      this.interval = addWindow(this.interval, part?.interval ?? null);
      this.cumulative = addWindow(this.cumulative, part?.cumulative ?? null);
    }
  }
}

class MergedTextReadout extends TextReadout {
  readonly parts: Parts<{ value: string; used: boolean }> = new Map();
  pick(): void {
    const part = first(this.parts);
    this.value = part?.value ?? '';
    this.used = part?.used ?? false;
  }
}

/** What the merged store holds of one source: its stats by position and its figures applied. */
interface Mirror {
  token: string;
  seq: number;
  counters: MergedCounter[];
  /** Value, reset base, used (0 or 1) per counter. */
  counterFigures: number[];
  gauges: MergedGauge[];
  /** Value, used (0 or 1) per gauge. */
  gaugeFigures: number[];
  histograms: MergedHistogram[];
  histogramUsed: boolean[];
  textReadouts: MergedTextReadout[];
  lookups: number;
}

const emptyMirror = (token: string): Mirror => ({
  token,
  seq: 0,
  counters: [],
  counterFigures: [],
  gauges: [],
  gaugeFigures: [],
  histograms: [],
  histogramUsed: [],
  textReadouts: [],
  lookups: 0,
});

const setUsed = (stat: { usedBy: number; used: boolean }, was: boolean, is: boolean): void => {
  if (was === is) return;
  stat.usedBy += is ? 1 : -1;
  stat.used = stat.usedBy > 0;
};

/**
 * The merged store's stat of that name, made on first sight; a new stat bumps the store's
 * generation, as `StatsStore`'s own lookups do, so cached sorted name lists are redone.
 */
function adopt<S>(store: StatsStore, stats: Map<string, S>, name: string, make: () => S): S {
  let stat = stats.get(name);
  if (!stat) {
    stat = make();
    stats.set(name, stat);
    store.generation += 1;
  }
  return stat;
}

/**
 * One store holding the primary's stats plus every worker's, kept from one `/stats` to the
 * next and moved by each source's deltas (its sort and Prometheus identities stay cached as
 * in-process; a name no process reports any more stays, at zero). Counters (and their reset
 * bases) and `Accumulate` gauges add up; a `NeverImport` gauge describes shared state
 * (listeners active, clusters known), so the primary's value wins, else the lowest worker's;
 * histogram bins add up window by window; a text readout is the primary's, else the lowest
 * worker's. Sources are ranked: the primary 0, workers by their id.
 */
export class MergedStats {
  readonly store = new StatsStore();
  private readonly sources = new Map<number, Mirror>();

  /** What to ask each source for: a dump relative to the last one applied. */
  since(): Record<number, DeltaBase> {
    const out: Record<number, DeltaBase> = {};
    for (const [rank, m] of this.sources) out[rank] = { token: m.token, seq: m.seq };
    return out;
  }

  /**
   * Applies a source's dump; `pause` is awaited every few thousand figures, so a large
   * dump does not hold the event loop. A delta that does not follow the last applied
   * answer is dropped: the next ask then gets a full dump.
   */
  async apply(rank: number, delta: StatsDelta, pause: () => Promise<void>): Promise<void> {
    let m = this.sources.get(rank);
    if (delta.base === null) {
      if (m) await this.remove(rank, m, pause);
      m = emptyMirror(delta.token);
      this.sources.set(rank, m);
    } else if (!m || m.token !== delta.token || m.seq !== delta.base) return;
    const store = this.store;
    for (const name of delta.newCounters) {
      m.counters.push(adopt(store, store.counters, name, () => new MergedCounter(name)) as MergedCounter);
      m.counterFigures.push(0, 0, 0);
    }
    for (const [name, mode] of delta.newGauges) {
      m.gauges.push(adopt(store, store.gauges, name, () => new MergedGauge(name, mode)) as MergedGauge);
      m.gaugeFigures.push(0, 0);
    }
    for (const [name, unit] of delta.newHistograms) {
      m.histograms.push(
        adopt(store, store.histograms, name, () => new MergedHistogram(name, unit)) as MergedHistogram,
      );
      m.histogramUsed.push(false);
    }
    for (const name of delta.newTextReadouts) {
      m.textReadouts.push(
        adopt(store, store.textReadouts, name, () => new MergedTextReadout(name)) as MergedTextReadout,
      );
    }
    await pause();
    const cs = delta.counters;
    for (let k = 0; k < cs.length; k += 4) {
      const i = cs[k] as number;
      const at = i * 3;
      const c = m.counters[i] as MergedCounter;
      const f = m.counterFigures;
      c.value += (cs[k + 1] as number) - (f[at] as number);
      c.resetBase += (cs[k + 2] as number) - (f[at + 1] as number);
      setUsed(c, f[at + 2] === 1, cs[k + 3] === 1);
      f[at] = cs[k + 1] as number;
      f[at + 1] = cs[k + 2] as number;
      f[at + 2] = cs[k + 3] as number;
      if (k % (STEP * 4) === 0) await pause();
    }
    const gs = delta.gauges;
    for (let k = 0; k < gs.length; k += 3) {
      const i = gs[k] as number;
      const at = i * 2;
      const g = m.gauges[i] as MergedGauge;
      const f = m.gaugeFigures;
      const value = gs[k + 1] as number;
      if (g.parts) {
        g.parts.set(rank, value);
        g.value = first(g.parts) ?? 0;
      } else g.value += value - (f[at] as number);
      setUsed(g, f[at + 1] === 1, gs[k + 2] === 1);
      f[at] = value;
      f[at + 1] = gs[k + 2] as number;
      if (k % (STEP * 3) === 0) await pause();
    }
    for (let k = 0; k < delta.histograms.length; k += 1) {
      const [i, used, interval, cumulative] = delta.histograms[k] as StatsDelta['histograms'][number];
      const h = m.histograms[i] as MergedHistogram;
      h.parts.set(rank, { interval, cumulative });
      h.sumParts();
      setUsed(h, m.histogramUsed[i] === true, used);
      m.histogramUsed[i] = used;
      if (k % STEP === 0) await pause();
    }
    for (const [i, value, used] of delta.textReadouts) {
      const t = m.textReadouts[i] as MergedTextReadout;
      t.parts.set(rank, { value, used });
      t.pick();
    }
    m.seq = delta.seq;
    m.lookups = delta.lookups;
    // Lookups happen where the traffic is: the gauge, which only the primary sets, counts them all.
    const lookups = store.gauges.get(RECENT_LOOKUPS_GAUGE);
    if (lookups) lookups.value = [...this.sources.values()].reduce((n, s) => n + s.lookups, 0);
  }

  /** Takes a source's figures out (before its full dump replaces them). */
  private async remove(rank: number, m: Mirror, pause: () => Promise<void>): Promise<void> {
    this.sources.delete(rank);
    for (let i = 0; i < m.counters.length; i += 1) {
      const c = m.counters[i] as MergedCounter;
      c.value -= m.counterFigures[i * 3] as number;
      c.resetBase -= m.counterFigures[i * 3 + 1] as number;
      setUsed(c, m.counterFigures[i * 3 + 2] === 1, false);
      if (i % STEP === 0) await pause();
    }
    for (let i = 0; i < m.gauges.length; i += 1) {
      const g = m.gauges[i] as MergedGauge;
      if (g.parts) {
        g.parts.delete(rank);
        g.value = first(g.parts) ?? 0;
      } else g.value -= m.gaugeFigures[i * 2] as number;
      setUsed(g, m.gaugeFigures[i * 2 + 1] === 1, false);
    }
    for (let i = 0; i < m.histograms.length; i += 1) {
      const h = m.histograms[i] as MergedHistogram;
      if (h.parts.delete(rank)) h.sumParts();
      setUsed(h, m.histogramUsed[i] === true, false);
    }
    for (const t of m.textReadouts) if (t.parts.delete(rank)) t.pick();
  }
}

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
