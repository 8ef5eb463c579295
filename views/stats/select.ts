import type { Counter, Gauge, Histogram, StatsStore, TextReadout } from '../../src/stats/store.js';
import type { StatsParams } from './params.js';

/** The stats a query selects, each list sorted by name. */
export interface Selection {
  textReadouts: TextReadout[];
  /** Counters and gauges merged, as the text and JSON formats list them (empty when split). */
  countersAndGauges: Array<Counter | Gauge>;
  /** Only when split. */
  counters: Counter[];
  /** Only when split. */
  gauges: Gauge[];
  histograms: Histogram[];
}

interface Sorted {
  generation: number;
  textReadouts: TextReadout[];
  counters: Counter[];
  gauges: Gauge[];
  countersAndGauges: Array<Counter | Gauge>;
  histograms: Histogram[];
}

const byName = (a: { name: string }, b: { name: string }): number =>
  a.name < b.name ? -1 : a.name > b.name ? 1 : 0;

/** Sorted lists per store, rebuilt only when a stat was created since (sorting 1M names is slow). */
const sortedCache = new WeakMap<StatsStore, Sorted>();

function sorted(store: StatsStore): Sorted {
  const hit = sortedCache.get(store);
  if (hit && hit.generation === store.generation) return hit;
  const counters = [...store.counters.values()].sort(byName);
  const gauges = [...store.gauges.values()].sort(byName);
  // merge two sorted lists instead of sorting their union again
  const countersAndGauges: Array<Counter | Gauge> = [];
  let i = 0;
  let j = 0;
  while (i < counters.length || j < gauges.length) {
    if (j >= gauges.length || (i < counters.length && byName(counters[i]!, gauges[j]!) <= 0)) {
      countersAndGauges.push(counters[i++]!);
    } else {
      countersAndGauges.push(gauges[j++]!);
    }
  }
  const out: Sorted = {
    generation: store.generation,
    textReadouts: [...store.textReadouts.values()].sort(byName),
    counters,
    gauges,
    countersAndGauges,
    histograms: [...store.histograms.values()].sort(byName),
  };
  sortedCache.set(store, out);
  return out;
}

/** How many names are tested between two empty pieces (turns for the event loop) while selecting. */
const SELECT_STEP = 2048;

function* keep<T extends { name: string; used: boolean }>(
  list: T[],
  params: StatsParams,
  wanted: boolean,
): Generator<string, T[]> {
  if (!wanted) return [];
  const { usedOnly, filter } = params;
  if (!usedOnly && !filter) return list;
  const out: T[] = [];
  for (let i = 0; i < list.length; i++) {
    const s = list[i]!;
    if (i % SELECT_STEP === SELECT_STEP - 1) yield '';
    if (usedOnly && !s.used) continue;
    if (filter && !filter(s.name)) continue;
    out.push(s);
  }
  return out;
}

/**
 * Applies `type`, `usedonly` and `filter` to the store's stats, yielding empty pieces along
 * the way (a filter tested on a million names takes a while; a streamed render hands them to
 * the admin, which gives the event loop a turn). `split` lists counters and gauges apart
 * (Prometheus); otherwise merged (text, JSON), so names are tested once.
 */
export function* selectStatsStepwise(
  store: StatsStore,
  params: StatsParams,
  split = false,
): Generator<string, Selection> {
  const all = sorted(store);
  const t = params.type;
  const counters = t === 'All' || t === 'Counters';
  const gauges = t === 'All' || t === 'Gauges';
  let countersAndGauges: Array<Counter | Gauge> = [];
  if (!split) {
    if (counters && gauges) countersAndGauges = yield* keep(all.countersAndGauges, params, true);
    else if (counters) countersAndGauges = yield* keep(all.counters, params, true);
    else if (gauges) countersAndGauges = yield* keep(all.gauges, params, true);
  }
  return {
    textReadouts: yield* keep(all.textReadouts, params, t === 'All' || t === 'TextReadouts'),
    countersAndGauges,
    counters: yield* keep(all.counters, params, split && counters),
    gauges: yield* keep(all.gauges, params, split && gauges),
    histograms: yield* keep(all.histograms, params, t === 'All' || t === 'Histograms'),
  };
}

/** The selection at once (see `selectStatsStepwise`). */
export function selectStats(store: StatsStore, params: StatsParams, split = false): Selection {
  const steps = selectStatsStepwise(store, params, split);
  for (;;) {
    const step = steps.next();
    if (step.done) return step.value;
  }
}
