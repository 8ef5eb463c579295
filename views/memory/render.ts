import { json, type ViewResult } from '../result.js';

/** The process figures `/memory` is made of (from `process.memoryUsage()` and `v8.getHeapStatistics()`). */
export interface MemoryFigures {
  heapUsed: number;
  heapTotal: number;
  external: number;
  rss: number;
  /** `v8.getHeapStatistics().total_physical_size`: heap bytes actually resident. */
  heapPhysical: number;
}

/** One data-plane worker's figures (`--concurrency` > 1), by its id (1..N). */
export interface WorkerMemory extends MemoryFigures {
  worker: number;
}

/**
 * `/memory` with the reference's six fields, uint64 as strings, always printed:
 * `allocated` = JS heap in use + external (C++ objects tied to JS, Buffers);
 * `heap_size` = JS heap reserved; `pageheap_free` = reserved but unused;
 * `pageheap_unmapped` = reserved but not resident; `total_thread_cache` = 0 (V8 has no
 * per-thread allocator cache); `total_physical_bytes` = resident set size.
 */
export function renderMemory(m: MemoryFigures, workers: readonly WorkerMemory[] = []): ViewResult {
  return json(memoryData(m, workers));
}

/** What `/memory` prints, as data. */
export function memoryData(m: MemoryFigures, workers: readonly WorkerMemory[] = []): Record<string, unknown> {
  const own = fields(m);
  // The reference's fields stay the primary's; each worker thread has its own heap.
  if (workers.length === 0) return own;
  return {
    ...own,
    workers: [...workers]
      .sort((a, b) => a.worker - b.worker)
      .map((w) => ({ worker_id: String(w.worker), ...fields(w) })),
  };
}

function fields(m: MemoryFigures): Record<string, string> {
  return {
    allocated: String(m.heapUsed + m.external),
    heap_size: String(m.heapTotal),
    pageheap_unmapped: String(Math.max(0, m.heapTotal - m.heapPhysical)),
    pageheap_free: String(Math.max(0, m.heapTotal - m.heapUsed)),
    total_thread_cache: '0',
    total_physical_bytes: String(m.rss),
  };
}
