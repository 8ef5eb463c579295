import type { Observable, Subscription } from 'rxjs';
import type { ListenerEntry, State } from '../../../reducers/index.js';
import type { StatsStore } from '../../stats/store.js';

/**
 * The `listener_manager.` figures that follow from the snapshot alone (how many listeners
 * were added, are active, draining, stopped). They are kept by the process that owns the
 * store, so with several workers they are counted once, not once per worker.
 */
export function trackListenerManagerStats(states: Observable<State>, stats: StatsStore): Subscription {
  const s = stats.scope('listener_manager');
  const added = s.counter('listener_added');
  const stopped = s.counter('listener_stopped');
  const active = s.gauge('total_listeners_active', 'NeverImport');
  const draining = s.gauge('total_listeners_draining', 'NeverImport');
  const warming = s.gauge('total_listeners_warming', 'NeverImport');
  let previous: State['listeners'] = {};
  return states.subscribe((state) => {
    if (state.listeners === previous) return;
    const count: Record<ListenerEntry['state'], number> = {
      pending: 0,
      active: 0,
      draining: 0,
      stopped: 0,
      failed: 0,
    };
    for (const entry of Object.values(state.listeners)) {
      count[entry.state] += 1;
      const before = previous[entry.name];
      if (!before) added.inc();
      if (entry.state === 'stopped' && before?.state !== 'stopped') stopped.inc();
    }
    active.set(count.active);
    draining.set(count.draining);
    warming.set(count.pending);
    previous = state.listeners;
  });
}
