/** How many distinct names the list keeps once enabled (the reference's capacity). */
export const RECENT_LOOKUPS_CAPACITY = 100;

/**
 * Stat names looked up by string. The total always counts (it is the gauge
 * `server.stats_recent_lookups`); the per-name list is kept only while enabled, holding the
 * most recently used names up to `capacity`.
 */
export class RecentLookups {
  /** Lookups since start or the last clear, whether or not the list is enabled. */
  total = 0;
  /** 0 = disabled. */
  capacity = 0;
  /** Insertion order is recency: a hit moves the name to the end. */
  private readonly counts = new Map<string, number>();

  lookup(name: string): void {
    this.total += 1;
    if (this.capacity === 0) return;
    const n = this.counts.get(name);
    if (n !== undefined) this.counts.delete(name);
    this.counts.set(name, (n ?? 0) + 1);
    if (this.counts.size > this.capacity) {
      const oldest = this.counts.keys().next().value;
      if (oldest !== undefined) this.counts.delete(oldest);
    }
  }

  enable(): void {
    this.capacity = RECENT_LOOKUPS_CAPACITY;
  }

  /** Stops collecting and drops the list; the total keeps counting. */
  disable(): void {
    this.capacity = 0;
    this.counts.clear();
  }

  /** Drops the list and the total; collection continues if enabled. */
  clear(): void {
    this.counts.clear();
    this.total = 0;
  }

  /** `[name, count]` sorted by count, then name (the `/stats/recentlookups` order). */
  entries(): Array<[string, number]> {
    return [...this.counts].sort((a, b) => a[1] - b[1] || (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
  }
}
