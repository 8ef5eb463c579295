import { addToBin, type Bins, binKey, mergeBins } from './bins.js';
import { RecentLookups } from './recent-lookups.js';

/**
 * The stats store. Stats are objects the data plane holds by reference, so an increment is
 * one property write: no lookup by name, no allocation, no RxJS, no immer on the hot path.
 * Names are looked up once, when a scope is built. Control changes (reset, recent lookups)
 * arrive as events and are applied here by the edge that subscribes to them (`StatsRuntime.start`).
 */
/**
 * Where a renderer keeps what it derives from the name (the Prometheus metric name and label
 * pairs), valid for the `renderedBy` that derived it: fields of the stat, not an object per
 * stat, and strings shared by every stat of one metric or one set of labels.
 */
export interface RenderSlot {
  renderedBy: unknown;
  renderedName: string;
  renderedLabels: string;
}

export class Counter implements RenderSlot {
  renderedBy: unknown = undefined;
  renderedName = '';
  renderedLabels = '';
  /** Absolute value since process start: what sinks see. */
  value = 0;
  /** `value` at the last `/reset_counters`; `/stats` shows `value - resetBase`. */
  resetBase = 0;
  used = false;
  constructor(readonly name: string) {}
  inc(): void {
    this.value += 1;
    this.used = true;
  }
  /**
   * Adding zero is not a use: callers keep running totals and add the delta since the last
   * look, which is zero at start-up, and `usedonly` must not list a counter nothing counted.
   */
  add(n: number): void {
    if (n === 0) return;
    this.value += n;
    this.used = true;
  }
  /** The value `/stats` shows (from zero after a counter reset). */
  get shown(): number {
    return this.value - this.resetBase;
  }
}

/** How a gauge combines across hot restarts (the reference's import modes). */
export type GaugeImportMode = 'Accumulate' | 'NeverImport';

export class Gauge implements RenderSlot {
  renderedBy: unknown = undefined;
  renderedName = '';
  renderedLabels = '';
  value = 0;
  used = false;
  constructor(
    readonly name: string,
    readonly importMode: GaugeImportMode = 'Accumulate',
  ) {}
  /** The value `/stats` shows: a gauge is never re-based, so its value. */
  get shown(): number {
    return this.value;
  }
  set(v: number): void {
    this.value = v;
    this.used = true;
  }
  inc(): void {
    this.value += 1;
    this.used = true;
  }
  dec(): void {
    this.value -= 1;
    this.used = true;
  }
  /** A zero delta is not a use (see `Counter.add`); `set` is, whatever the value, as in the reference. */
  add(n: number): void {
    if (n === 0) return;
    this.value += n;
    this.used = true;
  }
  sub(n: number): void {
    if (n === 0) return;
    this.value -= n;
    this.used = true;
  }
}

export type HistogramUnit = 'Unspecified' | 'Bytes' | 'Microseconds' | 'Milliseconds';

/** One summary window of a histogram: log-linear bins plus the exact count and sum. */
export interface HistogramWindow {
  bins: Bins;
  count: number;
  sum: number;
}

/**
 * A histogram. Samples go to the open window; a flush closes it: it becomes `interval`
 * (what `/stats` shows as the interval summary) and is folded into the cumulative one.
 * `cumulativeWindow()` includes the open window, so cumulative really is "since start".
 */
export class Histogram implements RenderSlot {
  renderedBy: unknown = undefined;
  renderedName = '';
  renderedLabels = '';
  used = false;
  /** The last closed window; null when nothing was recorded in it. */
  interval: HistogramWindow | null = null;
  private open: HistogramWindow | null = null;
  private closed: HistogramWindow | null = null;
  constructor(
    readonly name: string,
    readonly unit: HistogramUnit = 'Milliseconds',
    private readonly dirty: Histogram[] | null = null,
  ) {}
  record(value: number): void {
    let w = this.open;
    if (w === null) {
      w = { bins: new Map(), count: 0, sum: 0 };
      this.open = w;
      this.dirty?.push(this);
    }
    addToBin(w.bins, binKey(value), 1);
    w.count += 1;
    w.sum += Math.max(value, 0);
    this.used = true;
  }
  /** Closes the open window (the flush timer calls this through `StatsStore.flush`). */
  closeInterval(): void {
    this.interval = this.open;
    this.open = null;
    if (this.interval) {
      this.closed ??= { bins: new Map(), count: 0, sum: 0 };
      const c = this.closed;
      for (const [k, n] of this.interval.bins) addToBin(c.bins, k, n);
      c.count += this.interval.count;
      c.sum += this.interval.sum;
    }
  }
  /** How many samples were recorded since process start (without merging windows). */
  get recorded(): number {
    return (this.open?.count ?? 0) + (this.closed?.count ?? 0);
  }
  /** Everything recorded since process start, including the open window. */
  cumulativeWindow(): HistogramWindow | null {
    if (!this.open) return this.closed;
    if (!this.closed) return this.open;
    return {
      bins: mergeBins(this.closed.bins, this.open.bins),
      count: this.closed.count + this.open.count,
      sum: this.closed.sum + this.open.sum,
    };
  }
}

export class TextReadout implements RenderSlot {
  renderedBy: unknown = undefined;
  renderedName = '';
  renderedLabels = '';
  value = '';
  used = false;
  constructor(readonly name: string) {}
  set(v: string): void {
    this.value = v;
    this.used = true;
  }
}

/**
 * A stat name as the reference builds it: each `:` becomes `_` and leading or trailing
 * dots are dropped (`listener.127.0.0.1:80` -> `listener.127.0.0.1_80`).
 */
export function sanitizeStatName(name: string): string {
  let out = name.includes(':') ? name.replaceAll(':', '_') : name;
  if (out.startsWith('.') || out.endsWith('.')) out = out.replace(/^\.+|\.+$/g, '');
  return out;
}

/** The counters `Scope.counters` makes from a map of field to stat name. */
export type Counters<T> = { readonly [K in keyof T]: Counter };

/** A prefix over the store: `scope('cluster.a').counter('upstream_rq_total')`. */
export class Scope {
  constructor(
    readonly store: StatsStore,
    readonly prefix: string,
  ) {}
  counter(name: string): Counter {
    return this.store.counter(this.prefix + name);
  }
  /** A counter for each field, by the stat name it maps to: `{ overLimit: 'over_limit' }`. */
  counters<const T extends Record<string, string>>(names: T): Counters<T> {
    const out: Record<string, Counter> = {};
    for (const [field, name] of Object.entries(names)) out[field] = this.counter(name);
    return out as Counters<T>;
  }
  gauge(name: string, importMode?: GaugeImportMode): Gauge {
    return this.store.gauge(this.prefix + name, importMode);
  }
  histogram(name: string, unit?: HistogramUnit): Histogram {
    return this.store.histogram(this.prefix + name, unit);
  }
  textReadout(name: string): TextReadout {
    return this.store.textReadout(this.prefix + name);
  }
  scope(prefix: string): Scope {
    const part = sanitizeStatName(prefix);
    return new Scope(this.store, part ? `${this.prefix}${part}.` : this.prefix);
  }
}

export class StatsStore {
  readonly counters = new Map<string, Counter>();
  readonly gauges = new Map<string, Gauge>();
  readonly histograms = new Map<string, Histogram>();
  readonly textReadouts = new Map<string, TextReadout>();
  /** Names looked up by string (`/stats/recentlookups`). */
  readonly recentLookups = new RecentLookups();
  /** Bumped whenever a stat is created, so renderers can cache sorted name lists. */
  generation = 0;
  /** Histograms recorded to since the last flush (so a flush skips idle ones). */
  private readonly dirty: Histogram[] = [];
  /** Histograms whose `interval` the last flush set (to clear at the next one). */
  private lastFlushed: Histogram[] = [];

  counter(name: string): Counter {
    this.recentLookups.lookup(name);
    let c = this.counters.get(name);
    if (!c) {
      c = new Counter(name);
      this.counters.set(name, c);
      this.generation += 1;
    }
    return c;
  }
  gauge(name: string, importMode?: GaugeImportMode): Gauge {
    this.recentLookups.lookup(name);
    let g = this.gauges.get(name);
    if (!g) {
      g = new Gauge(name, importMode);
      this.gauges.set(name, g);
      this.generation += 1;
    }
    return g;
  }
  histogram(name: string, unit?: HistogramUnit): Histogram {
    this.recentLookups.lookup(name);
    let h = this.histograms.get(name);
    if (!h) {
      h = new Histogram(name, unit, this.dirty);
      this.histograms.set(name, h);
      this.generation += 1;
    }
    return h;
  }
  textReadout(name: string): TextReadout {
    this.recentLookups.lookup(name);
    let t = this.textReadouts.get(name);
    if (!t) {
      t = new TextReadout(name);
      this.textReadouts.set(name, t);
      this.generation += 1;
    }
    return t;
  }
  /** A scope; the prefix is sanitised (`:` -> `_`) and gets its trailing dot. */
  scope(prefix: string): Scope {
    const part = sanitizeStatName(prefix);
    return new Scope(this, part ? `${part}.` : '');
  }

  /** `/reset_counters`: `/stats` shows every counter from zero; absolute values stay for sinks. */
  resetCounters(): void {
    for (const c of this.counters.values()) c.resetBase = c.value;
  }

  /**
   * Closes every histogram's interval. The sinks (the hystrix stream) are fed by
   * `StatsRuntime`, after the workers' stats are merged in.
   */
  flush(): void {
    for (const h of this.lastFlushed) h.interval = null;
    const recorded = this.dirty.splice(0);
    for (const h of recorded) h.closeInterval();
    this.lastFlushed = recorded;
  }
}

/** The scope of a cluster's stats: `cluster.<alt_stat_name or name>.`. */
export function clusterScope(store: StatsStore, statName: string): Scope {
  return store.scope(`cluster.${statName}`);
}

/** The scope of a listener's stats: `listener.<ip>_<port>.` from `ip:port`. */
export function listenerScope(store: StatsStore, address: string): Scope {
  return store.scope(`listener.${address}`);
}

/** The scope of an HTTP connection manager's stats: `http.<stat_prefix>.`. */
export function httpScope(store: StatsStore, statPrefix: string): Scope {
  return store.scope(`http.${statPrefix}`);
}
