/**
 * A thread's stats as plain data for the workers' stats merge (`stats-merge.ts`): the delta a
 * source sends and the tracker that makes it; `merged-stats.ts` applies it on the primary.
 */
import { randomUUID } from 'node:crypto';
import type { GaugeImportMode, HistogramUnit, HistogramWindow, StatsStore } from '../../stats/store.js';

/** A histogram window as plain data: its bins as pairs. */
export interface WindowDump {
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

/** How many stats a dump looks at, or figures a merge changes, between two pause points. */
export const STEP = 4096;

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
