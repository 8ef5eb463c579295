import { getHeapStatistics } from 'node:v8';
import type { MemoryFigures } from '../views/memory/render.js';

/** This process's `/memory` figures, read now (the primary's, or a worker's for its answer). */
export function memoryFigures(): MemoryFigures {
  const usage = process.memoryUsage();
  return {
    heapUsed: usage.heapUsed,
    heapTotal: usage.heapTotal,
    external: usage.external,
    rss: usage.rss,
    heapPhysical: getHeapStatistics().total_physical_size,
  };
}
