/**
 * The stats store. Stats are objects the data plane holds by reference, so an increment is
 * one property write: no lookup by name, no allocation, no RxJS, no immer on the hot path.
 * Names are looked up once, when a scope is built. Control changes (reset, recent lookups)
 * arrive as events and are applied here by the edge that subscribes to them.
 */
export class Counter {
  value = 0;
  used = false;
  constructor(readonly name: string) {}
  inc(): void {
    this.value += 1;
    this.used = true;
  }
  add(n: number): void {
    this.value += n;
    this.used = true;
  }
}

/** How a gauge combines across hot restarts (the reference's import modes). */
export type GaugeImportMode = 'Accumulate' | 'NeverImport';

export class Gauge {
  value = 0;
  used = false;
  constructor(
    readonly name: string,
    readonly importMode: GaugeImportMode = 'Accumulate',
  ) {}
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
  add(n: number): void {
    this.value += n;
    this.used = true;
  }
  sub(n: number): void {
    this.value -= n;
    this.used = true;
  }
}

export type HistogramUnit = 'Unspecified' | 'Bytes' | 'Microseconds' | 'Milliseconds';

export class Histogram {
  used = false;
  /** Samples since the last flush; moved into `cumulative` by `flush()`. */
  interval: number[] = [];
  cumulative: number[] = [];
  constructor(
    readonly name: string,
    readonly unit: HistogramUnit = 'Milliseconds',
  ) {}
  record(value: number): void {
    this.interval.push(value);
    this.used = true;
  }
}

export class TextReadout {
  value = '';
  used = false;
  constructor(readonly name: string) {}
  set(v: string): void {
    this.value = v;
    this.used = true;
  }
}

/** A prefix over the store: `scope('cluster.a.').counter('upstream_rq_total')`. */
export class Scope {
  constructor(
    readonly store: StatsStore,
    readonly prefix: string,
  ) {}
  counter(name: string): Counter {
    return this.store.counter(this.prefix + name);
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
    return new Scope(this.store, `${this.prefix}${prefix}.`);
  }
}

export class StatsStore {
  readonly counters = new Map<string, Counter>();
  readonly gauges = new Map<string, Gauge>();
  readonly histograms = new Map<string, Histogram>();
  readonly textReadouts = new Map<string, TextReadout>();

  counter(name: string): Counter {
    let c = this.counters.get(name);
    if (!c) this.counters.set(name, (c = new Counter(name)));
    return c;
  }
  gauge(name: string, importMode?: GaugeImportMode): Gauge {
    let g = this.gauges.get(name);
    if (!g) this.gauges.set(name, (g = new Gauge(name, importMode)));
    return g;
  }
  histogram(name: string, unit?: HistogramUnit): Histogram {
    let h = this.histograms.get(name);
    if (!h) this.histograms.set(name, (h = new Histogram(name, unit)));
    return h;
  }
  textReadout(name: string): TextReadout {
    let t = this.textReadouts.get(name);
    if (!t) this.textReadouts.set(name, (t = new TextReadout(name)));
    return t;
  }
  scope(prefix: string): Scope {
    return new Scope(this, prefix ? `${prefix}.` : '');
  }
}
