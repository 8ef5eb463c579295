import { getHeapStatistics, setFlagsFromString } from 'node:v8';
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

/**
 * The V8 heap flags a serving process sets for itself, each with the V8 flags that, given by
 * the operator (node's command line or `NODE_OPTIONS`), leave that generation to V8.
 *
 * Young generation: V8 doubles a semi-space from 1 MiB up to 16 MiB under load, and keeps it,
 * so the new space holds 32 MiB for the life of a busy process. A growth factor of 1 keeps the
 * initial 1 MiB: more scavenges, each as cheap (a proxy's survivors are the requests in flight,
 * not the size of the space). Old generation: V8 lets it grow up to 4 times what the last full
 * GC kept before the next one; 20 % bounds the garbage promoted under load that waits there.
 * Both are read by V8 at each GC, which is why they can be set after start, unlike
 * `--max-semi-space-size`. Figures: bench/README.md, "Process memory, 2026-11-25 session 4".
 */
const SERVING_HEAP_FLAGS: ReadonlyArray<{ flag: string; unlessGiven: readonly string[] }> = [
  {
    flag: '--semi-space-growth-factor=1',
    unlessGiven: ['--max-semi-space-size', '--min-semi-space-size', '--semi-space-growth-factor'],
  },
  { flag: '--heap-growing-percent=20', unlessGiven: ['--heap-growing-percent'] },
];

/** The flags of `SERVING_HEAP_FLAGS` that `nodeArgs` (node's own arguments) do not override. */
export function servingHeapFlags(nodeArgs: readonly string[]): string[] {
  // V8 reads `_` and `-` alike in flag names.
  const names = new Set(nodeArgs.map((arg) => arg.split('=')[0]!.replaceAll('_', '-')));
  return SERVING_HEAP_FLAGS.filter(({ unlessGiven }) => !unlessGiven.some((n) => names.has(n))).map(
    (f) => f.flag,
  );
}

/** `servingHeapFlags` for this process's node flags and `NODE_OPTIONS` (which its children inherit). */
export function ownServingHeapFlags(): string[] {
  return servingHeapFlags([...process.execArgv, ...(process.env.NODE_OPTIONS ?? '').split(/\s+/)]);
}

/**
 * Sets `ownServingHeapFlags()` in this process. Called by `bin/proxy.js` before the CLI is
 * imported: loading the modules is what first grows the young generation. Data-plane
 * workers get the same flags on their command line (`src/dataplane/workers/pool.ts`).
 */
export function limitServingHeap(): void {
  for (const flag of ownServingHeapFlags()) setFlagsFromString(flag);
}
