import { bucketsText, summaryText } from './histogram.js';
import { escapeHtml } from './html-escape.js';
import type { StatsParams } from './params.js';
import type { Selection } from './select.js';

/**
 * The plain-text `/stats`: text readouts (`name: "value"`), counters and gauges merged by
 * name, then histograms. Lines go to an array joined once: a million string
 * concatenations would copy the growing body over and over.
 */
export function renderText(sel: Selection, params: StatsParams): string {
  const lines: string[] = [];
  for (const t of sel.textReadouts) lines.push(`${t.name}: "${escapeHtml(t.value)}"`);
  for (const s of sel.countersAndGauges) {
    lines.push(`${s.name}: ${s.shown}`);
  }
  const mode = params.histogramBuckets;
  for (const h of sel.histograms) {
    const body =
      mode === 'cumulative' || mode === 'disjoint' ? bucketsText(h, mode === 'disjoint') : summaryText(h);
    lines.push(`${h.name}: ${body}`);
  }
  return lines.length === 0 ? '' : `${lines.join('\n')}\n`;
}
