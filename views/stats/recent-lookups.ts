import type { RecentLookups } from '../../src/stats/recent-lookups.js';
import { type Rendered, TEXT } from './params.js';

/**
 * `/stats/recentlookups`: the table of names by count and the lookups they count (since
 * tracking was enabled), or the not-enabled notice and every lookup since start.
 */
export function renderRecentLookups(lookups: RecentLookups): Rendered {
  const entries = lookups.entries();
  if (entries.length === 0 && lookups.capacity === 0) {
    const notice = 'Lookup tracking is not enabled. Use /stats/recentlookups/enable to enable.\n';
    return { status: 200, contentType: TEXT, body: `${notice}\ntotal: ${lookups.total}\n` };
  }
  let table = '   Count Lookup\n';
  for (const [name, count] of entries) table += `${String(count).padStart(8)} ${name}\n`;
  return { status: 200, contentType: TEXT, body: `${table}\ntotal: ${lookups.tracked}\n` };
}
