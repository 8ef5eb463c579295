import type { Envelope, JsonObject, ProxyEvent } from '../../../events/index.js';
import type { State } from '../../../reducers/index.js';
import type { WorkerMemory } from '../../../views/memory/render.js';
import type { Options } from '../../options.js';
import type { ProfilerKind } from '../../profiler.js';
import type { LookupsDump } from '../../stats/recent-lookups.js';
import type { OutcomeBatch } from '../../upstream/outcomes.js';
import type { DeltaBase, StatsDelta } from './stats-delta.js';
import type { HostStatsByCluster } from './stats-merge.js';

/**
 * What the primary asks every worker, for the admin interface: whether it caught up, its
 * stats, its per-host figures, its recent lookups, or to start or stop one of its profilers (stopping writes the
 * profile next to `path`, named after the worker).
 */
export type WorkerQuery =
  /** Answered at once: the channel keeps order, so every envelope sent before is folded. */
  | { kind: 'sync' }
  /**
   * The stats that moved since the answer `since[workerId]` names (a full dump without one);
   * with `flush`, the worker first closes its histograms' interval windows (the primary's flush).
   */
  | { kind: 'stats'; since: Record<number, DeltaBase>; flush?: boolean }
  /** The per-host figures of `/clusters`. */
  | { kind: 'hosts' }
  | { kind: 'recent-lookups' }
  | { kind: 'memory' }
  | { kind: 'profiler'; profiler: ProfilerKind; enable: boolean; path: string }
  /** `/tap`: attach the session a TapRequest body asks for (`request`), or detach it (null). */
  | { kind: 'tap'; configId: string; request: JsonObject | null };

/**
 * A worker's profiler answer: the file it wrote (on stop), or why it did nothing; `unwritten`
 * when it stopped but its profile could not be written.
 */
export interface ProfilerAnswer {
  file: string | null;
  error: string | null;
  unwritten?: string;
}

/** The answer to each query kind. */
export interface WorkerAnswers {
  sync: true;
  stats: { worker: number; delta: StatsDelta };
  hosts: HostStatsByCluster;
  'recent-lookups': LookupsDump;
  memory: WorkerMemory;
  profiler: ProfilerAnswer;
  /** Whether the worker has a tap filter with the config id (it attached only then). */
  tap: { hasFilter: boolean };
}

export type WorkerAnswer<Q extends WorkerQuery> = WorkerAnswers[Q['kind']];

/** Primary -> worker, over the worker thread's message port (structured clone). */
export type PrimaryMessage =
  /** The snapshot to start from; the batches the primary folds after it follow one by one. */
  | {
      kind: 'init';
      workerId: number;
      options: Options;
      state: State;
      /** The process's local rate limit buckets (shared-buckets.ts): the same memory in every thread. */
      buckets: SharedArrayBuffer;
      /** The primary's clock origin (src/control/clock.ts), so both read one time. */
      clockOrigin: number;
    }
  /**
   * A batch the primary's merge window released and its store folded. Not the envelopes as
   * ingested: one held in the merge window when a worker starts is in neither its snapshot nor
   * (were they sent as ingested) what follows it, and the worker would never learn it.
   */
  | { kind: 'batch'; batch: Envelope<ProxyEvent>[] }
  | { kind: 'query'; id: number; query: WorkerQuery }
  | { kind: 'shutdown' }
  /** `POST /reopen_logs` or SIGUSR1 (which only the main thread hears): reopen the log files. */
  | { kind: 'reopen-logs' }
  /** The port to bind for a port-0 listener: another worker's, or 0 to bind a free one first. */
  | { kind: 'port-answer'; id: number; port: number };

/** Worker -> primary. */
export type WorkerMessage =
  /** The worker listens for messages now: send it the snapshot. */
  | { kind: 'hello' }
  /** An event the worker's edges produced: the primary's store is the only one that stamps events. */
  | { kind: 'dispatch'; event: ProxyEvent; source: string }
  /** The worker's listeners present at init are bound (or failed). */
  | { kind: 'ready' }
  /** Outcomes of requests to clusters with health checks or outlier detection, for the primary's health edges. */
  | { kind: 'outcomes'; batch: OutcomeBatch }
  /** A trace recorded for the `/tap` session attached to `configId`, for the admin client. */
  | { kind: 'tap-trace'; configId: string; trace: JsonObject }
  | { kind: 'answer'; id: number; answer: WorkerAnswers[keyof WorkerAnswers] }
  /** Before binding the port-0 listener `listener`: which port do the other workers bind? */
  | { kind: 'port-request'; id: number; listener: string };

export function isWorkerMessage(m: unknown): m is WorkerMessage {
  return typeof m === 'object' && m !== null && typeof (m as { kind?: unknown }).kind === 'string';
}

export function isPrimaryMessage(m: unknown): m is PrimaryMessage {
  return isWorkerMessage(m);
}
