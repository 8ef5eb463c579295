import { readFileSync, realpathSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { getHeapStatistics, setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { isMainThread, type ResourceLimits } from 'node:worker_threads';
import type { MemoryFigures } from '../views/memory/render.js';
import { memoryUsage } from './memory-usage.js';
import { loadAddon } from './native.js';

/**
 * This thread's `/memory` figures, read now (the primary's, or a worker's for its answer).
 * The resident set is the process's, so the main thread reports it; a worker thread's
 * `rss` is its own heap's resident part.
 */
export function memoryFigures(): MemoryFigures {
  const usage = memoryUsage();
  const heapPhysical = getHeapStatistics().total_physical_size;
  return {
    heapUsed: usage.heapUsed,
    heapTotal: usage.heapTotal,
    external: usage.external,
    rss: isMainThread ? usage.rss : heapPhysical,
    heapPhysical,
  };
}

/**
 * The V8 heap flags a serving process sets for itself, each with the V8 flags that, given by
 * the operator (node's command line or `NODE_OPTIONS`), leave that generation to V8.
 *
 * Young generation: V8 doubles a semi-space from 1 MiB up to 16 MiB under load, and keeps it,
 * so the new space holds 32 MiB for the life of a busy process. A growth factor of 1 keeps the
 * size it has when set (1-2 MiB): more scavenges, each as cheap (a proxy's survivors are the
 * requests in flight, not the size of the space). Old generation: V8 lets it grow up to 4 times what the last full
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

/** `servingHeapFlags` for this process's node flags and `NODE_OPTIONS`. */
function ownServingHeapFlags(): string[] {
  return servingHeapFlags([...process.execArgv, ...(process.env.NODE_OPTIONS ?? '').split(/\s+/)]);
}

/** V8's own value of each flag of `SERVING_HEAP_FLAGS` (0: V8's dynamic growing factor). */
const V8_DEFAULTS: Readonly<Record<string, string>> = {
  '--semi-space-growth-factor=1': '--semi-space-growth-factor=2',
  '--heap-growing-percent=20': '--heap-growing-percent=0',
};

/** Above this much heap in use once LIVE, a serving process keeps V8's own growth. */
const LARGE_HEAP_BYTES = 64 * 2 ** 20;

/** The flags `limitServingHeap` set in this process. */
let applied: string[] = [];

/**
 * Sets `servingHeapFlags` in this process. Called by `bin/proxy.js` before the CLI is
 * imported: loading the modules is what first grows the young generation.
 */
export function limitServingHeap(): void {
  applied = ownServingHeapFlags();
  for (const flag of applied) setFlagsFromString(flag);
}

/**
 * V8's own growth while the bootstrap loads: a large config (10,000 clusters) starts, and
 * later renders its admin pages, a third to half faster in CPU with V8's young generation
 * than with 1 MiB semi-spaces (bench/README.md, "Process memory, 2026-11-25 session 4").
 */
export function lendHeapToStartUp(): void {
  for (const flag of applied) setFlagsFromString(V8_DEFAULTS[flag]!);
}

/**
 * Once LIVE: a process whose heap in use (`heapUsed`, of `process.memoryUsage()`) is small
 * limits its heap again, which freezes the young generation at the size start-up left it;
 * a large one keeps V8's growth, where 32 MiB of young generation are a small share.
 * True when the limits are set.
 */
export function settleServingHeap(heapUsed = memoryUsage().heapUsed): boolean {
  if (applied.length === 0 || heapUsed >= LARGE_HEAP_BYTES) return false;
  for (const flag of applied) setFlagsFromString(flag);
  return true;
}

/**
 * V8 sizes a young generation at three semi-spaces: the main thread's settle at 2 MiB
 * (`settleServingHeap`), so a worker thread gets the same 6 MiB.
 */
const WORKER_YOUNG_GENERATION_MB = 6;

/**
 * From this old-generation limit on, V8 maps the binary's built-in code anew for each isolate
 * ("short builtin calls", x64): 2.1 MB of the binary's pages more in the resident set for
 * each thread once it has served. An isolate below it calls the built-ins where the binary
 * has them, pages every such thread shares (bench/README.md, "Footprint: the binary's pages").
 */
const SHORT_BUILTIN_CALLS_MB = 2048;

/**
 * The heap limits of a data-plane worker thread. Young generation, while this process limits
 * its heap: the V8 flags are the process's, but a worker thread starts while start-up has
 * V8's own growth (`lendHeapToStartUp`) and would keep the young generation it grew to then,
 * about 11 MiB a thread more under load than capped (bench/README.md, "Workers as threads");
 * none when the operator's flags size it. Old generation, where the process's limit is 2 GiB
 * or more: just under `SHORT_BUILTIN_CALLS_MB`, so the workers share the binary's built-ins
 * instead of each paging in a copy. An operator's `--max-old-space-size` wins over it.
 */
export function workerResourceLimits(): ResourceLimits {
  const limits: ResourceLimits = applied.includes('--semi-space-growth-factor=1')
    ? { maxYoungGenerationSizeMb: WORKER_YOUNG_GENERATION_MB }
    : {};
  if (getHeapStatistics().heap_size_limit >= SHORT_BUILTIN_CALLS_MB * 2 ** 20) {
    limits.maxOldGenerationSizeMb = SHORT_BUILTIN_CALLS_MB - 1;
  }
  return limits;
}

/** V8's collector: node's `gc` under --expose-gc, else the one a context made after setting that flag has. */
export function v8Collector(): NodeJS.GCFunction {
  if (typeof globalThis.gc === 'function') return globalThis.gc;
  setFlagsFromString('--expose-gc');
  return runInNewContext('gc');
}

/** `native/memory.c`: glibc's `malloc_trim(0)`, and `madvise` over a file's clean pages. */
interface MemoryAddon {
  mallocTrim(): boolean;
  mallocTrimInBackground(minIntervalMs: number): boolean;
  releaseFilePages?(address: number, length: number): number;
}

let addon: MemoryAddon | string | undefined;

/**
 * Gives the free pages inside every malloc arena back to the system (glibc's `malloc_trim(0)`,
 * through `native/memory.c`); nothing where the addon was not built or the C library is not
 * glibc. After a burst the arenas of V8's compiler threads and of each thread keep 5-10 MB a
 * thread free but resident (glibc trims only the top of an arena by itself): the collection
 * and then this took `--concurrency 2` from 156 to 137 MB and 4 from 213 to 175.
 */
export function trimMalloc(): boolean {
  addon ??= loadAddon<MemoryAddon>('memory');
  return typeof addon !== 'string' && addon.mallocTrim();
}

/**
 * `trimMalloc` on a libuv thread-pool thread, while the threads serve: none within
 * `minIntervalMs` of the last one any thread started, and one at a time. Under load, the
 * arenas' free pages come back faster than a burst ends: right after the bench's runs, malloc
 * held 29-37 MB of `--concurrency 2`'s RSS, 12-15 of it once trimmed (bench/README.md,
 * "Footprint: malloc trimmed while serving"). True when a trim was started.
 */
export function trimMallocInBackground(minIntervalMs: number): boolean {
  addon ??= loadAddon<MemoryAddon>('memory');
  // An addon built before this function existed (a checkout whose native/ was not rebuilt).
  return typeof addon !== 'string' && typeof addon.mallocTrimInBackground === 'function'
    ? addon.mallocTrimInBackground(minIntervalMs)
    : false;
}

/**
 * The read-only mappings of `binary` in a `/proc/PID/maps` text, as [start, length]: its
 * code, its constants and tables (the built-in modules' sources and code cache, ICU's data,
 * V8's snapshot), and V8's copy of its built-ins in an isolate's code range. A writable
 * mapping is the process's own data and is never listed.
 */
export function readOnlyMappings(maps: string, binary: string): Array<[number, number]> {
  const out: Array<[number, number]> = [];
  for (const line of maps.split('\n')) {
    const m = /^([0-9a-f]+)-([0-9a-f]+) (\S+) \S+ \S+ \d+\s+(.+)$/.exec(line);
    if (!m || m[4] !== binary || m[3]!.includes('w')) continue;
    const start = Number.parseInt(m[1]!, 16);
    out.push([start, Number.parseInt(m[2]!, 16) - start]);
  }
  return out;
}

/**
 * Lets go of the pages of the `node` binary this process has mapped (`releaseFilePages` in
 * `native/memory.c`, MADV_DONTNEED over the pages that are the file's), process-wide. Start-up
 * reads about 25 MB of the binary that serving never reads again (the parser, the snapshot,
 * the built-in modules' sources and code cache, ICU's collation data that meow's import
 * sorts with): they stay mapped, and counted in the resident set, until the kernel reclaims
 * them under pressure. What serving reads comes back from the page cache at its next access
 * (a minor fault). Returns the bytes advised: 0 where the addon or `/proc` is missing.
 */
export function releaseBinaryPages(): number {
  addon ??= loadAddon<MemoryAddon>('memory');
  if (typeof addon === 'string' || typeof addon.releaseFilePages !== 'function') return 0;
  let maps: string;
  let binary: string;
  try {
    maps = readFileSync('/proc/self/maps', 'utf8');
    binary = realpathSync(process.execPath);
  } catch {
    return 0;
  }
  let advised = 0;
  for (const [start, length] of readOnlyMappings(maps, binary)) advised += addon.releaseFilePages(start, length);
  return advised;
}

/** How often a thread looks at how busy its event loop was (`performance.eventLoopUtilization`). */
const IDLE_WINDOW_MS = 1000;
/** A window at least this busy (share of the time the loop ran callbacks) counts as load. */
const BUSY_UTILIZATION = 0.05;
/** A window at most this busy counts as idle. */
const IDLE_UTILIZATION = 0.01;

/**
 * One step of the idle watch: whether the window just ended, `utilization` busy, ends a burst
 * of load (a busy window, then an idle one), and whether the thread was busy since its last
 * collection.
 */
export function idleStep(busy: boolean, utilization: number): { busy: boolean; collect: boolean } {
  if (utilization >= BUSY_UTILIZATION) return { busy: true, collect: false };
  if (busy && utilization <= IDLE_UTILIZATION) return { busy: false, collect: true };
  return { busy, collect: false };
}

/** V8's last-resort collection (every generation; the pages V8 pooled released), made once per thread. */
let lastResort: ReturnType<typeof v8Collector> | null = null;

function collectEverything(): void {
  lastResort ??= v8Collector();
  lastResort({ type: 'major', execution: 'sync', flavor: 'last-resort' });
}

/**
 * Start-up's garbage given back the moment a thread is ready to serve (the main thread once
 * LIVE, a worker once its listeners are bound), before any request: loading the modules and
 * the bootstrap leaves garbage, pooled pages and the young generation V8 grew while lent
 * (`lendHeapToStartUp`). Left to the first idle second, that collection came after the first
 * burst when load began at LIVE, so the burst ran on start-up's heap: `--concurrency 2` held
 * 169-217 MB right after the bench's runs instead of 152-157 (bench/README.md, "Footprint:
 * start-up collected at LIVE"). Then the binary's pages start-up
 * read go (`releaseBinaryPages`): process-wide, so the last thread ready lets go of what the
 * others' start-ups read too. No collection runs for a heap in use past `LARGE_HEAP_BYTES`.
 * Returns the time it took.
 */
export function collectStartUp(): number {
  const started = performance.now();
  if (memoryUsage().heapUsed < LARGE_HEAP_BYTES) {
    collectEverything();
    trimMalloc();
  }
  releaseBinaryPages();
  return performance.now() - started;
}

/**
 * While this thread serves, malloc's free pages go back every window (`trimMallocInBackground`,
 * off the event loop). Once a burst of load ends, it gives back what it can without slowing the
 * next one: malloc's free pages (`trimMalloc`) after every burst, and after the first burst V8's
 * last-resort collection too, which nothing asks for on a server (V8's memory reducer did not run
 * in 20 s idle): `--concurrency 2` idles at about 112 MB 5 s after the bench's runs with it and
 * 133 without. After later bursts a collection would give back 5-20 MB more, but each burst then
 * started from an emptied heap: CPU per request in bursts after 3 s pauses rose by half (TLS h2
 * and h2c, bench/README.md), so only the trim runs then. A burst is a busy second followed by an
 * idle one; start-up is not one (`collectStartUp` gave it back). A heap in use past
 * `LARGE_HEAP_BYTES` (10,000 clusters) is left alone: its collection would take long enough to
 * delay the first request after the pause. Returns the watch's stop; `onCollect` is told each
 * step's duration. Figures: bench/README.md, "Footprint, 2026-11-28".
 */
export function collectWhenIdle(onCollect?: (ms: number) => void, windowMs = IDLE_WINDOW_MS): () => void {
  let last = performance.eventLoopUtilization();
  let busy = false;
  let collected = false;
  const timer = setInterval(() => {
    const now = performance.eventLoopUtilization();
    const step = idleStep(busy, performance.eventLoopUtilization(now, last).utilization);
    busy = step.busy;
    last = now;
    if (step.busy) trimMallocInBackground(windowMs);
    if (!step.collect || memoryUsage().heapUsed >= LARGE_HEAP_BYTES) return;
    const started = performance.now();
    if (!collected) {
      collected = true;
      collectEverything();
    }
    trimMalloc();
    // The next window starts after the collection: its own time is not load.
    last = performance.eventLoopUtilization();
    onCollect?.(performance.now() - started);
  }, windowMs);
  timer.unref();
  return () => clearInterval(timer);
}
