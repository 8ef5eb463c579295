import type { Options } from '../cli/options.js';
import type { Store } from '../control/store.js';
import type { Loggers } from '../logging/loggers.js';
import type { StatsStore } from '../stats/store.js';

/**
 * What every subsystem is started with. Subsystems are edges: they read snapshots from
 * `store`, dispatch events to it, and keep their own stats by reference.
 */
export interface ServerContext {
  readonly options: Options;
  readonly store: Store;
  readonly stats: StatsStore;
  readonly log: Loggers;
  /** Registers a step of clean shutdown; steps run in reverse order of registration. */
  onShutdown(step: () => Promise<void> | void): void;
  /** Runs the shutdown steps and exits the process with `code`. */
  shutdown(code: number): Promise<void>;
}
