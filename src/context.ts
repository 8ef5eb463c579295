/**
 * The server context: everything a part of the server is given, built once by
 * `createContext` (the server, the benches and the test helpers call it; a data-plane
 * worker thread builds its own with `buildContext`, without the primary's facilities). Each
 * facility is a named field (src/context-core.ts); edges that fill or drive one are started
 * in `src/edges/start.ts`. docs/design.md ("The context") lists them.
 */
import { noContention } from './contention.js';
import { buildContext, type ContextParts, type ServerContext } from './context-core.js';
import { WorkerPool } from './dataplane/workers/pool.js';
import { WorkerStatsMerge } from './dataplane/workers/stats-merge.js';
import { openEventLog } from './edges/event-log.js';

export type { ContextParts, ServerContext } from './context-core.js';

/** The module each data-plane worker thread runs: `.ts` under tsx, `.js` in the build. */
const WORKER_ENTRY = new URL(
  `./server/worker${import.meta.url.endsWith('.ts') ? '.ts' : '.js'}`,
  import.meta.url,
);

export function createContext(parts: ContextParts): ServerContext {
  if ((parts.role ?? 'primary') === 'worker') return buildContext(parts, null);
  const { options } = parts;
  return buildContext(parts, (core) => ({
    eventLog: openEventLog(core, { bootstrap: parts.bootstrap, history: parts.history ?? {} }),
    contention: options.enableMutexTracing ? noContention() : null,
    // The main thread is one of the N data-plane threads.
    workers: options.concurrency > 1 ? new WorkerPool(core, options.concurrency - 1, WORKER_ENTRY) : null,
    workerStats: options.concurrency > 1 ? new WorkerStatsMerge(core.stats) : null,
  }));
}
