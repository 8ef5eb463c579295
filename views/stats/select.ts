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

/**
 * Sorted lists per store, brought up to date only when a stat was created since: the new
 * stats are sorted alone and merged in, so a trickle of new stats costs a merge, not a sort
 * of a million names.
 */
const sortedCache = new WeakMap<StatsStore, Sorted>();

/** How many names are sorted, moved or merged between two empty pieces (turns for the event loop). */
const SORT_STEP = 16384;

/**
 * The end of the stretch of `list` from `from` that goes before `name` (names `<= name` when
 * `ties`, else `< name`): galloping, then a binary search, so a long stretch costs a few
 * comparisons (names come in blocks, a scope's stats together).
 */
function stretchEnd(list: readonly { name: string }[], from: number, name: string, ties: boolean): number {
  const n = list.length;
  let lo = from;
  let hi = from;
  let step = 1;
  while (hi < n && (ties ? list[hi]!.name <= name : list[hi]!.name < name)) {
    lo = hi + 1;
    hi = lo + step;
    step *= 2;
  }
  if (hi > n) hi = n;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (ties ? list[mid]!.name <= name : list[mid]!.name < name) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** `a` and `b` (each sorted) merged into one sorted list, a step at a time; on a tie `a` comes first. */
function* merged<T extends { name: string }>(a: readonly T[], b: readonly T[]): Generator<string, T[]> {
  if (b.length === 0) return a as T[];
  if (a.length === 0) return b as T[];
  const out: T[] = [];
  let i = 0;
  let j = 0;
  let moved = 0;
  while (i < a.length && j < b.length) {
    const ai = stretchEnd(a, i, b[j]!.name, true);
    while (i < ai) out.push(a[i++]!);
    if (i === a.length) break;
    const bj = stretchEnd(b, j, a[i]!.name, false);
    while (j < bj) out.push(b[j++]!);
    if (out.length - moved >= SORT_STEP) {
      moved = out.length;
      yield '';
    }
  }
  while (i < a.length) out.push(a[i++]!);
  while (j < b.length) out.push(b[j++]!);
  return out;
}

/**
 * `list` sorted by name without holding the event loop for the whole of it: runs of
 * `SORT_STEP` sorted apart, then merged pairwise (one `Array.sort` of a million names held
 * it for a quarter of a second or more).
 */
function* sortedStepwise<T extends { name: string }>(list: T[]): Generator<string, T[]> {
  let runs: T[][] = [];
  for (let i = 0; i < list.length; i += SORT_STEP) {
    runs.push(list.slice(i, i + SORT_STEP).sort(byName));
    yield '';
  }
  while (runs.length > 1) {
    const next: T[][] = [];
    for (let r = 0; r < runs.length; r += 2) next.push(yield* merged(runs[r]!, runs[r + 1] ?? []));
    runs = next;
  }
  return runs[0] ?? [];
}

/** The stats of `all` created after its first `known` (a Map keeps insertion order and stats are never removed). */
function* created<T>(all: Map<string, T>, known: number): Generator<string, T[]> {
  const out: T[] = [];
  let i = 0;
  for (const s of all.values()) {
    if (i >= known) out.push(s);
    i += 1;
    if (i % (SORT_STEP * 4) === 0) yield '';
  }
  return out;
}

/** `prev` (sorted, the first stats of `all`) with the stats created since merged in. */
function* updated<T extends { name: string }>(prev: T[], all: Map<string, T>): Generator<string, T[]> {
  if (all.size === prev.length) return prev;
  return yield* merged(prev, yield* sortedStepwise(yield* created(all, prev.length)));
}

const EMPTY: Sorted = {
  generation: -1,
  textReadouts: [],
  counters: [],
  gauges: [],
  countersAndGauges: [],
  histograms: [],
};

/** The store's stats sorted by name, brought up to date a step at a time (see `sortedCache`). */
function* sorted(store: StatsStore): Generator<string, Sorted> {
  const prev = sortedCache.get(store) ?? EMPTY;
  if (prev.generation === store.generation) return prev;
  const generation = store.generation;
  const counters = yield* updated(prev.counters, store.counters);
  const gauges = yield* updated(prev.gauges, store.gauges);
  const out: Sorted = {
    generation,
    textReadouts: yield* updated(prev.textReadouts, store.textReadouts),
    counters,
    gauges,
    // merge two sorted lists instead of sorting their union again
    countersAndGauges:
      counters === prev.counters && gauges === prev.gauges
        ? prev.countersAndGauges
        : yield* merged<Counter | Gauge>(counters, gauges),
    histograms: yield* updated(prev.histograms, store.histograms),
  };
  // a render that sorted more recent stats meanwhile keeps its newer lists
  if ((sortedCache.get(store)?.generation ?? -1) <= generation) sortedCache.set(store, out);
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
  const all = yield* sorted(store);
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
