import type { Envelope, ProxyEvent } from '../../../events/index.js';
import type { State } from '../../../reducers/index.js';
import type { Options } from '../../cli/options.js';
import type { StatsDump } from './stats-merge.js';

/** Primary -> worker, over the `node:cluster` IPC channel (JSON-serialised). */
export type PrimaryMessage =
  /** The snapshot to start from; the envelopes ingested after it follow one by one. */
  | { kind: 'init'; workerId: number; options: Options; state: State }
  | { kind: 'envelope'; env: Envelope<ProxyEvent> }
  | { kind: 'stats-request'; id: number }
  | { kind: 'shutdown' };

/** Worker -> primary. */
export type WorkerMessage =
  /** The worker listens for messages now: send it the snapshot. */
  | { kind: 'hello' }
  /** An event the worker's edges produced: the primary's store is the only one that stamps events. */
  | { kind: 'dispatch'; event: ProxyEvent; source: string }
  /** The worker's listeners present at init are bound (or failed). */
  | { kind: 'ready' }
  | { kind: 'stats-dump'; id: number; dump: StatsDump };

export function isWorkerMessage(m: unknown): m is WorkerMessage {
  return typeof m === 'object' && m !== null && typeof (m as { kind?: unknown }).kind === 'string';
}

export function isPrimaryMessage(m: unknown): m is PrimaryMessage {
  return isWorkerMessage(m);
}
