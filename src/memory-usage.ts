import { getHeapStatistics } from 'node:v8';

/** The resident set last read, for when it cannot be read now. */
let lastRss = 0;

/**
 * `process.memoryUsage()` that never throws. Node reads the resident set from `/proc`, which
 * takes a file descriptor: with every descriptor in use (EMFILE, a connection flood against
 * `ulimit -n`) it throws, and the timers that read it (idle collection, stats, the overload
 * monitor) ended the process. Then the heap figures come from V8, which opens nothing, and the
 * resident set is the last one read.
 */
export function memoryUsage(): NodeJS.MemoryUsage {
  try {
    const usage = process.memoryUsage();
    lastRss = usage.rss;
    return usage;
  } catch {
    const heap = getHeapStatistics();
    return {
      rss: lastRss,
      heapTotal: heap.total_heap_size,
      heapUsed: heap.used_heap_size,
      external: heap.external_memory,
      arrayBuffers: 0,
    };
  }
}
