interface Entry<T> {
  deadline: number;
  order: number;
  item: T;
}

/**
 * Earliest-deadline-first scheduler, as the reference's `EdfScheduler`: an entry of weight
 * w is due `1 / w` after the current time; the earliest deadline is picked (ties by
 * insertion order) and re-added with its weight at that moment. A pick reuses the picked
 * entry, so scheduling allocates nothing.
 */
export class EdfScheduler<T> {
  private readonly heap: Entry<T>[] = [];
  private now = 0;
  private order = 0;

  get size(): number {
    return this.heap.length;
  }

  add(weight: number, item: T): void {
    const heap = this.heap;
    heap.push({ deadline: this.now + 1 / weight, order: this.order++, item });
    let i = heap.length - 1;
    const entry = heap[i]!;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      const p = heap[parent]!;
      if (!before(entry, p)) break;
      heap[i] = p;
      i = parent;
    }
    heap[i] = entry;
  }

  /** The due entry, re-added with `weightOf(item)`; null when empty. */
  pickAndAdd(weightOf: (item: T) => number): T | null {
    const top = this.heap[0];
    if (!top) return null;
    this.now = top.deadline;
    top.deadline = this.now + 1 / weightOf(top.item);
    top.order = this.order++;
    this.siftDown();
    return top.item;
  }

  private siftDown(): void {
    const heap = this.heap;
    const n = heap.length;
    const entry = heap[0]!;
    let i = 0;
    for (;;) {
      const left = 2 * i + 1;
      if (left >= n) break;
      const right = left + 1;
      const child = right < n && before(heap[right]!, heap[left]!) ? right : left;
      const c = heap[child]!;
      if (!before(c, entry)) break;
      heap[i] = c;
      i = child;
    }
    heap[i] = entry;
  }
}

function before<T>(a: Entry<T>, b: Entry<T>): boolean {
  return a.deadline < b.deadline || (a.deadline === b.deadline && a.order < b.order);
}
