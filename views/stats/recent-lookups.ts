import type { RecentLookups } from '../../src/stats/recent-lookups.js';
import { type Rendered, TEXT } from './params.js';

/** `/stats/recentlookups`: the table of names by count, or the not-enabled notice; then the total. */
export function renderRecentLookups(lookups: RecentLookups): Rendered {
  const entries = lookups.entries();
  let table: string;
  if (entries.length === 0 && lookups.capacity === 0) {
    table = 'Lookup tracking is not enabled. Use /stats/recentlookups/enable to enable.\n';
  } else {
    table = '   Count Lookup\n';
    for (const [name, count] of entries) table += `${String(count).padStart(8)} ${name}\n`;
  }
  return { status: 200, contentType: TEXT, body: `${table}\ntotal: ${lookups.total}\n` };
}
