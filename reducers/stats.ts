import type { Draft } from 'immer';
import type { On } from './on.js';
import type { State } from './state.js';

export function onCountersReset(draft: Draft<State>, env: On<'stats/counters-reset'>): void {
  draft.stats.countersResetSeq = env.seq;
  // The reference clears recent lookups along with the counters.
  draft.stats.recentLookupsClearedSeq = env.seq;
}

export function onRecentLookupsEnabled(draft: Draft<State>): void {
  draft.stats.recentLookupsEnabled = true;
}

export function onRecentLookupsDisabled(draft: Draft<State>): void {
  draft.stats.recentLookupsEnabled = false;
}

export function onRecentLookupsCleared(draft: Draft<State>, env: On<'stats/recent-lookups-cleared'>): void {
  draft.stats.recentLookupsClearedSeq = env.seq;
}
