/**
 * A list whose elements are made as they are read: `jsonChunks` writes each as it comes, so
 * a dump of 10,000 clusters redacts one cluster at a time instead of holding a redacted copy
 * of all of them before the first byte is written. Never empty (see `lazyList`), so a walker
 * may open its brackets before it has made an element. `JSON.stringify` sees it made whole.
 */
export class LazyList<S = unknown, T = unknown> {
  constructor(
    private readonly source: readonly S[],
    private readonly make: (s: S) => T,
  ) {}
  get length(): number {
    return this.source.length;
  }
  /** Element `i`, made afresh. */
  at(i: number): T {
    return this.make(this.source[i] as S);
  }
  /** The same list with `f` applied to each element as it is made. */
  map<U>(f: (t: T) => U): LazyList<S, U> {
    return new LazyList(this.source, (s) => f(this.make(s)));
  }
  /** The elements that pass, made now (a filter keeps few: they are held, the rest dropped at once). */
  filter(keep: (t: T) => boolean): T[] {
    const out: T[] = [];
    for (const s of this.source) {
      const t = this.make(s);
      if (keep(t)) out.push(t);
    }
    return out;
  }
  toJSON(): T[] {
    return this.source.map(this.make);
  }
}

/** `source` mapped by `make` lazily; an empty list stays a plain `[]`. */
export function lazyList<S, T>(source: readonly S[], make: (s: S) => T): LazyList<S, T> | T[] {
  return source.length === 0 ? [] : new LazyList(source, make);
}

/** `value` with every lazy list in it made whole (for consumers that walk plain data). */
export function madeWhole(value: unknown): unknown {
  if (value instanceof LazyList) return value.toJSON().map(madeWhole);
  if (Array.isArray(value)) return value.map(madeWhole);
  if (value === null || typeof value !== 'object') return value;
  return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, madeWhole(v)]));
}
