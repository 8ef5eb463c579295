import type { Subscription } from 'rxjs';
import { logLevelsChanged } from '../../events/logging.js';
import type { Store } from '../control/store.js';
import { distinctUntilChanged, map } from '../rx.js';
import type { Loggers } from './loggers.js';

/**
 * Makes the store the authority on log levels: dispatches the start-up levels of every
 * logger (so the snapshot, and an event log, hold them) and applies every later
 * `logging/levels-changed` (`POST /logging`, replay) to the loggers.
 */
export function bindLoggingToStore(loggers: Loggers, store: Store): Subscription {
  const levels = Object.fromEntries(loggers.list().map(({ name, level }) => [name, level]));
  store.dispatch(logLevelsChanged({ levels }), 'logging');
  return store.state$
    .pipe(
      map((state) => state.logging.levels),
      distinctUntilChanged(),
    )
    .subscribe((wanted) => {
      const current = new Map(loggers.list().map(({ name, level }) => [name, level]));
      for (const [name, level] of Object.entries(wanted)) {
        if (current.get(name) !== level) loggers.setLevel(name, level);
      }
    });
}
