import { defineEvent } from './define.js';

/** `POST /reset_counters`: `/stats` shows counters from zero; sinks are unaffected. */
export const countersReset = defineEvent('stats/counters-reset');

export const recentLookupsEnabled = defineEvent('stats/recent-lookups-enabled');
export const recentLookupsDisabled = defineEvent('stats/recent-lookups-disabled');
export const recentLookupsCleared = defineEvent('stats/recent-lookups-cleared');
