import type { Draft } from 'immer';
import type { On } from './on.js';
import type { State } from './state.js';

export function onCountersReset(draft: Draft<State>, env: On<'stats/counters-reset'>): void {
  draft.stats.countersResetSeq = env.seq;
  // The reference clears recent lookups along with the counters.
  draft.stats.recentLookupsClearedSeq = env.seq;
}

export function onRecentLookups(
  draft: Draft<State>,
  env: On<'stats/recent-lookups-enabled' | 'stats/recent-lookups-disabled' | 'stats/recent-lookups-cleared'>,
): void {
  switch (env.event.type) {
    case 'stats/recent-lookups-enabled':
      draft.stats.recentLookupsEnabled = true;
      return;
    case 'stats/recent-lookups-disabled':
      draft.stats.recentLookupsEnabled = false;
      return;
    case 'stats/recent-lookups-cleared':
      draft.stats.recentLookupsClearedSeq = env.seq;
  }
}
