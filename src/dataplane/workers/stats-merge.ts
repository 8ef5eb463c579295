import { RECENT_LOOKUPS_GAUGE } from '../../stats/server-stats.js';
import {
  type GaugeImportMode,
  Histogram,
  type HistogramUnit,
  type HistogramWindow,
  StatsStore,
} from '../../stats/store.js';
import type { HostStats } from '../../upstream/types.js';

interface WindowDump {
  bins: Array<[number, number]>;
  count: number;
  sum: number;
}

/**
 * A worker's stats as plain data, for the IPC channel: counters with their reset base,
 * gauges with their import mode, histogram windows as bins, and the per-host figures of
 * `/clusters` by cluster name and host address.
 */
export interface StatsDump {
  counters: Array<{ name: string; value: number; resetBase: number; used: boolean }>;
  gauges: Array<{ name: string; value: number; importMode: GaugeImportMode; used: boolean }>;
  histograms: Array<{
    name: string;
    unit: HistogramUnit;
    used: boolean;
    interval: WindowDump | null;
    cumulative: WindowDump | null;
  }>;
  textReadouts: Array<{ name: string; value: string; used: boolean }>;
  /** Stat names this process looked up by string (its part of `server.stats_recent_lookups`). */
  lookups: number;
  hosts: HostStatsByCluster;
}

/** Per-host figures by cluster name, then host address (`ip:port`). */
export type HostStatsByCluster = Record<string, Record<string, HostStats>>;

const windowDump = (w: HistogramWindow | null): WindowDump | null =>
  w && { bins: [...w.bins], count: w.count, sum: w.sum };

/** Dumps a store (a worker's) and the host figures its cluster manager holds. */
export function dumpStats(stats: StatsStore, hosts: HostStatsByCluster): StatsDump {
  return {
    counters: [...stats.counters.values()].map((c) => ({
      name: c.name,
      value: c.value,
      resetBase: c.resetBase,
      used: c.used,
    })),
    gauges: [...stats.gauges.values()].map((g) => ({
      name: g.name,
      value: g.value,
      importMode: g.importMode,
      used: g.used,
    })),
    histograms: [...stats.histograms.values()].map((h) => ({
      name: h.name,
      unit: h.unit,
      used: h.used,
      interval: windowDump(h.interval),
      cumulative: windowDump(h.cumulativeWindow()),
    })),
    textReadouts: [...stats.textReadouts.values()].map((t) => ({
      name: t.name,
      value: t.value,
      used: t.used,
    })),
    lookups: stats.recentLookups.total,
    hosts,
  };
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

/** A histogram assembled from several processes' windows; read-only by intent. */
class MergedHistogram extends Histogram {
  cumulative: HistogramWindow | null = null;
  override cumulativeWindow(): HistogramWindow | null {
    return this.cumulative;
  }
}

/**
 * One store holding the primary's stats plus every worker's: counters (and their reset
 * bases) and `Accumulate` gauges add up; a `NeverImport` gauge describes shared state
 * (listeners active, clusters known), so the primary's value wins, else the first
 * worker's; histogram bins add up window by window; a text readout is the primary's, else
 * the first worker's. Rendering the result changes nothing live. `into` is a store this
 * function made before, merged into again from zero: its stats are kept, so its sorted names
 * and Prometheus identities stay cached from one `/stats` to the next (a name no process
 * reports any more stays, at zero, as a name does in-process).
 */
export function mergeStats(
  primary: StatsStore,
  dumps: readonly StatsDump[],
  into: StatsStore = new StatsStore(),
): StatsStore {
  const out = into;
  for (const c of out.counters.values()) {
    c.value = 0;
    c.resetBase = 0;
    c.used = false;
  }
  for (const g of out.gauges.values()) {
    g.value = 0;
    g.used = false;
  }
  for (const h of out.histograms.values() as Iterable<MergedHistogram>) {
    h.interval = null;
    h.cumulative = null;
    h.used = false;
  }
  /** `NeverImport` gauges and text readouts given their value in this merge (the first one wins). */
  const given = { gauges: new Set<string>(), textReadouts: new Set<string>() };
  const own = dumpStats(primary, {});
  for (const dump of [own, ...dumps]) {
    for (const c of dump.counters) {
      const into = out.counters.get(c.name) ?? out.counter(c.name);
      into.value += c.value;
      into.resetBase += c.resetBase;
      into.used ||= c.used;
    }
    for (const g of dump.gauges) {
      const into = out.gauges.get(g.name) ?? out.gauge(g.name, g.importMode);
      if (g.importMode === 'Accumulate') into.value += g.value;
      else if (!given.gauges.has(g.name)) {
        into.value = g.value;
        given.gauges.add(g.name);
      }
      into.used ||= g.used;
    }
    for (const h of dump.histograms) {
      let into = out.histograms.get(h.name) as MergedHistogram | undefined;
      if (!into) {
        into = new MergedHistogram(h.name, h.unit);
        out.histograms.set(h.name, into);
      }
      into.interval = addWindow(into.interval, h.interval);
      into.cumulative = addWindow(into.cumulative, h.cumulative);
      into.used ||= h.used;
    }
    for (const t of dump.textReadouts) {
      if (given.textReadouts.has(t.name)) continue;
      given.textReadouts.add(t.name);
      const into = out.textReadouts.get(t.name) ?? out.textReadout(t.name);
      into.value = t.value;
      into.used = t.used;
    }
  }
  // Lookups happen where the traffic is: the gauge, which only the primary sets, counts them all.
  const lookups = out.gauges.get(RECENT_LOOKUPS_GAUGE);
  if (lookups) lookups.value = dumps.reduce((n, d) => n + d.lookups, primary.recentLookups.total);
  return out;
}

/** The per-host figures of every worker, added up. */
export function mergeHostStats(dumps: readonly StatsDump[]): HostStatsByCluster {
  const out: HostStatsByCluster = {};
  for (const dump of dumps) {
    for (const [cluster, hosts] of Object.entries(dump.hosts)) {
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
