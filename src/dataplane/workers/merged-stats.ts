/** The primary's side of the workers' stats merge: one store moved by each source's deltas (`stats-delta.ts`). */
import { RECENT_LOOKUPS_GAUGE } from '../../stats/server-stats.js';
import {
  Counter,
  Gauge,
  Histogram,
  type HistogramWindow,
  StatsStore,
  TextReadout,
} from '../../stats/store.js';
import { type DeltaBase, STEP, type StatsDelta, type WindowDump } from './stats-delta.js';

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
