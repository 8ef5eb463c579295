/**
 * The server context: everything a part of the server is given, built once by
 * `createContext` (the server, each data-plane worker, the benches and the test helpers all
 * call it). Each facility is a named field, made here; edges that fill or drive one are
 * started in `src/server/edges.ts`. docs/design.md ("The context") lists them.
 */
import type { JsonObject } from '../events/index.js';
import { type ContentionFigures, noContention } from './admin/contention-sampler.js';
import type { Options } from './cli/options.js';
import { type EventLog, openEventLog } from './control/event-log.js';
import type { History, HistoryOptions } from './control/history.js';
import { Store } from './control/store.js';
import type { Core } from './core.js';
import { DataPlaneFigures } from './dataplane/figures.js';
import { TapRegistry } from './dataplane/http/tap-registry.js';
import { ListenSockets } from './dataplane/listeners/sockets.js';
import { WorkerPool } from './dataplane/workers/pool.js';
import { createLoggers, type Loggers } from './logging/loggers.js';
import { Profilers } from './profiler.js';
import { StatsRuntime } from './stats/start.js';
import { StatsStore } from './stats/store.js';

export interface ServerContext extends Core {
  /**
   * Past snapshots and events, recorded from the first event on: `?at=SEQ`, `/events`,
   * `/snapshots`. Null in a context built without one (a data-plane worker, handler tests).
   */
  readonly history: History | null;
  /** The `--event-log` recorder: `flush()` before answering a mutation. */
  readonly eventLog: EventLog;
  /** Tag extraction, flush settings and the hystrix stream; `start()` is the stats edge. */
  readonly statsRuntime: StatsRuntime;
  /** This process's V8 profilers (`/cpuprofiler`, `/heapprofiler`, a worker's share of them). */
  readonly profilers: Profilers;
  /** Event-loop lateness figures with `--enable-mutex-tracing`, else null (`/contention`). */
  readonly contention: ContentionFigures | null;
  /** The data plane's live per-host figures as `/clusters` reads them. */
  readonly figures: DataPlaneFigures;
  /**
   * The data-plane workers with `--concurrency` > 1 in the primary (forked by
   * `startDataPlane`), else null: the traffic is served in this process.
   */
  readonly workers: WorkerPool | null;
  /**
   * Listening sockets by address: adopted from the hot-restart parent epoch when binding,
   * offered to the next epoch once bound (docs/hot-restart.md).
   */
  readonly sockets: ListenSockets;
  /** The tap filters of this process and the `/tap` sessions attached to them. */
  readonly taps: TapRegistry;
  /** Runs the shutdown steps (once) and exits with `code` (see `ContextParts.exit`). */
  shutdown(code: number): Promise<void>;
  /** Runs the shutdown steps (once) without exiting: what tests and a worker's stop call. */
  close(): Promise<void>;
}

export interface ContextParts {
  options: Options;
  /** Default: loggers made from the options. */
  log?: Loggers;
  /** Default: a fresh store. A data-plane worker passes the store that relays to the primary. */
  store?: Store;
  /**
   * The primary records the event log and forks the workers; a data-plane worker (which
   * receives the primary's options) does neither. Default 'primary'.
   */
  role?: 'primary' | 'worker';
  /** The bootstrap written at the head of the `--event-log` file. */
  bootstrap?: JsonObject | null;
  /** How much history to keep, or false for none. Default: a history with its defaults. */
  history?: HistoryOptions | false;
  /** Default: sockets with no parent epoch to adopt from. */
  sockets?: ListenSockets;
  /** What `shutdown(code)` does after the steps ran. Default: `process.exit`. */
  exit?: (code: number) => void;
}

export function createContext(parts: ContextParts): ServerContext {
  const { options } = parts;
  const primary = (parts.role ?? 'primary') === 'primary';
  const log = parts.log ?? createLoggers(options);
  const steps: Array<() => Promise<void> | void> = [];
  let closing: Promise<void> | null = null;
  const close = (): Promise<void> => {
    closing ??= (async () => {
      for (const step of steps.splice(0).reverse()) {
        try {
          await step();
        } catch (err) {
          log.get('main').error({ err }, 'shutdown step failed');
        }
      }
    })();
    return closing;
  };
  const exit = parts.exit ?? ((code: number) => process.exit(code));
  const core: Core = {
    options,
    store: parts.store ?? new Store(),
    stats: new StatsStore(),
    log,
    onShutdown: (step) => steps.push(step),
  };
  const eventLog: EventLog = primary
    ? openEventLog(core, { bootstrap: parts.bootstrap, history: parts.history ?? {} })
    : { history: null, flush: () => Promise.resolve(), release: () => Promise.resolve(), resume: () => {} };
  return {
    ...core,
    history: eventLog.history,
    eventLog,
    statsRuntime: new StatsRuntime(core),
    profilers: new Profilers(),
    contention: primary && options.enableMutexTracing ? noContention() : null,
    figures: new DataPlaneFigures(),
    workers: primary && options.concurrency > 1 ? new WorkerPool(core, options.concurrency) : null,
    sockets: parts.sockets ?? new ListenSockets(),
    taps: new TapRegistry(),
    async shutdown(code) {
      await close();
      exit(code);
    },
    close,
  };
}
