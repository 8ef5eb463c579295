/**
 * The context every thread of a server is built on (`buildContext`): the main thread's
 * through `createContext` (src/context.ts), which adds what only it has (the event log, the
 * contention figures, the worker pool and its merged stats), and a data-plane worker
 * thread's directly, so a worker does not load those modules. docs/design.md ("The context") lists the facilities.
 */
import type { JsonObject } from '../events/index.js';
import type { ContentionFigures } from './contention.js';
import type { Options } from './options.js';
import type { History, HistoryOptions } from './control/history.js';
import { Store } from './control/store.js';
import type { Core } from './core.js';
import { DataPlaneFigures } from './dataplane/figures.js';
import { TapRegistry } from './dataplane/http/tap-registry.js';
import { ListenSockets } from './dataplane/listeners/sockets.js';
import type { WorkerPool } from './dataplane/workers/pool.js';
import type { WorkerStatsMerge } from './dataplane/workers/stats-merge.js';
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
   * The data-plane worker threads with `--concurrency` > 1 in the primary (started by
   * `startDataPlane`), else null: the traffic is served in this thread.
   */
  readonly workers: WorkerPool | null;
  /**
   * With worker threads, the merged stats the admin shows (`collectWorkerStats` moves them by
   * each thread's changes); else null: `stats` is the whole of it.
   */
  readonly workerStats: WorkerStatsMerge | null;
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
   * For `createContext`: the primary records the event log and starts the worker threads; a
   * data-plane worker (which receives the primary's options) does neither. Default 'primary'.
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

/** The event log of a process (`ctx.eventLog`), and the history it keeps (`ctx.history`). */
export interface EventLog {
  /** Past snapshots and events; null when the context keeps none. */
  readonly history: History | null;
  /**
   * Resolves once every event dispatched so far is written to the file (at once without one);
   * rejects with the write's error while the file cannot take them.
   */
  flush(): Promise<void>;
  /**
   * Writes what is buffered and stops writing the file, keeping the history: a hot-restart
   * parent does this before its child appends to the same file.
   */
  release(): Promise<void>;
  /**
   * Writes the file again after `release()` (the hot-restart child that took it failed):
   * sequence numbers go on after the file's last line, and a header and a checkpoint of the
   * current state open this process's part, so a replay from there needs nothing before it.
   */
  resume(): void;
  /**
   * Reopens the file (after it was moved away for rotation): the new one opens with a header
   * and a checkpoint, so it replays on its own. `/reopen_logs` and SIGUSR1 do this.
   */
  reopen(): Promise<void>;
}

/** What only the primary has, made from the core: a worker thread's context has none of it. */
export interface PrimaryFacilities {
  eventLog: EventLog;
  contention: ContentionFigures | null;
  workers: WorkerPool | null;
  workerStats: WorkerStatsMerge | null;
}

/** A worker thread's event log: it records nothing (the primary does). */
const NO_EVENT_LOG: EventLog = {
  history: null,
  flush: () => Promise.resolve(),
  release: () => Promise.resolve(),
  resume: () => {},
  reopen: () => Promise.resolve(),
};

/** The context of `parts`, with the primary's facilities when `primary` makes them. */
export function buildContext(
  parts: ContextParts,
  primary: ((core: Core) => PrimaryFacilities) | null,
): ServerContext {
  const { options } = parts;
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
  const { eventLog, contention, workers, workerStats } = primary?.(core) ?? {
    eventLog: NO_EVENT_LOG,
    contention: null,
    workers: null,
    workerStats: null,
  };
  return {
    ...core,
    history: eventLog.history,
    eventLog,
    statsRuntime: new StatsRuntime(core),
    profilers: new Profilers(),
    contention,
    figures: new DataPlaneFigures(),
    workers,
    workerStats,
    sockets: parts.sockets ?? new ListenSockets(),
    taps: new TapRegistry(),
    async shutdown(code) {
      await close();
      exit(code);
    },
    close,
  };
}
