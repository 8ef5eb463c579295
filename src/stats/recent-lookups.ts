/** How many distinct names the list keeps once enabled (the reference's capacity). */
export const RECENT_LOOKUPS_CAPACITY = 100;

/** A process's recent lookups as plain data (see `RecentLookups.dump`). */
export interface LookupsDump {
  total: number;
  tracked: number;
  capacity: number;
  entries: Array<[string, number]>;
}

/**
 * Stat names looked up by string. The total always counts (it is the gauge
 * `server.stats_recent_lookups`); the per-name list is kept only while enabled, holding the
 * most recently used names up to `capacity`.
 */
export class RecentLookups {
  /** Lookups since start or the last clear, whether or not the list is enabled. */
  total = 0;
  /**
   * Lookups since the list was enabled (or cleared): what the listed names count, those
   * pushed out of the list by newer ones included. `/stats/recentlookups` prints it as its
   * total while enabled, so the total is never made of names it cannot show.
   */
  tracked = 0;
  /** 0 = disabled. */
  capacity = 0;
  /** Insertion order is recency: a hit moves the name to the end. */
  private readonly counts = new Map<string, number>();

  lookup(name: string): void {
    this.total += 1;
    if (this.capacity === 0) return;
    this.tracked += 1;
    const n = this.counts.get(name);
    if (n !== undefined) this.counts.delete(name);
    this.counts.set(name, (n ?? 0) + 1);
    if (this.counts.size > this.capacity) {
      const oldest = this.counts.keys().next().value;
      if (oldest !== undefined) this.counts.delete(oldest);
    }
  }

  enable(): void {
    if (this.capacity === 0) this.tracked = 0;
    this.capacity = RECENT_LOOKUPS_CAPACITY;
  }

  /** Stops collecting and drops the list; the total keeps counting. */
  disable(): void {
    this.capacity = 0;
    this.tracked = 0;
    this.counts.clear();
  }

  /** Drops the list and the total; collection continues if enabled. */
  clear(): void {
    this.counts.clear();
    this.total = 0;
    this.tracked = 0;
  }

  /** The list and total as plain data, for a worker's answer over its message port. */
  dump(): LookupsDump {
    return { total: this.total, tracked: this.tracked, capacity: this.capacity, entries: [...this.counts] };
  }

  /**
   * Adds another process's lookups: totals add, and so do the counts of a name both saw.
   * Recency is not comparable across threads, so the union is kept whole (each thread
   * holds at most `capacity` names); the list counts as enabled when any part is.
   */
  absorb(part: LookupsDump): void {
    this.total += part.total;
    this.tracked += part.tracked ?? 0;
    this.capacity = Math.max(this.capacity, part.capacity);
    for (const [name, n] of part.entries) this.counts.set(name, (this.counts.get(name) ?? 0) + n);
  }

  /** `[name, count]` sorted by count, then name (the `/stats/recentlookups` order). */
  entries(): Array<[string, number]> {
    return [...this.counts].sort((a, b) => a[1] - b[1] || (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
  }
}
