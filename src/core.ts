import type { Options } from './options.js';
import type { Store } from './control/store.js';
import type { Loggers } from './logging/loggers.js';
import type { StatsStore } from './stats/store.js';

/**
 * What every part of a server process is built on: the options, the store of snapshots,
 * the stats, the loggers and the shutdown hook. The facilities of `src/context.ts` take this
 * (never the whole context), so the context can name them without an import circle.
 */
export interface Core {
  readonly options: Options;
  readonly store: Store;
  readonly stats: StatsStore;
  readonly log: Loggers;
  /** Registers a step of clean shutdown; steps run in reverse order of registration. */
  onShutdown(step: () => Promise<void> | void): void;
}
