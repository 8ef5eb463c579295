import type { State } from '../../reducers/index.js';
import type { Options } from '../cli/options.js';
import type { Store } from '../control/store.js';
import type { Loggers } from '../logging/loggers.js';
import type { StatsStore } from '../stats/store.js';
import type { ClusterManager } from '../upstream/cluster-manager.js';

/**
 * What every subsystem is started with. Subsystems are edges: they read snapshots from
 * `store`, dispatch events to it, and keep their own stats by reference.
 */
export interface ServerContext {
  readonly options: Options;
  readonly store: Store;
  readonly stats: StatsStore;
  readonly log: Loggers;
  /**
   * Past snapshots for time travel (`?at=SEQ`): the state after `seq`, or null when that
   * point is older than what is retained. Set by the event-log edge.
   */
  history?: { stateAt(seq: number): State | null; oldestSeq(): number };
  /**
   * This process's cluster runtimes (`/clusters` reads host figures here). Set by
   * `startDataPlane` unless an earlier edge created it. With `--concurrency` > 1 the
   * traffic figures live in the workers: use `collectWorkerStats(ctx)`.
   */
  clusters?: ClusterManager;
  /** Registers a step of clean shutdown; steps run in reverse order of registration. */
  onShutdown(step: () => Promise<void> | void): void;
  /** Runs the shutdown steps and exits the process with `code`. */
  shutdown(code: number): Promise<void>;
}
