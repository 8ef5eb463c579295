import { CHUNK_CHARS } from '../json-chunks.js';
import { bucketsText, summaryText } from './histogram.js';
import { escapeHtml } from './html-escape.js';
import type { StatsParams } from './params.js';
import type { Selection } from './select.js';

/**
 * The plain-text `/stats`: text readouts (`name: "value"`), counters and gauges merged by
 * name, then histograms; in pieces of about `limit` characters, so the admin can stream a
 * million stats without holding the body (see `Chunks` in views/result.ts).
 */
export function* textChunks(sel: Selection, params: StatsParams, limit = CHUNK_CHARS): Generator<string> {
  let buf = '';
  for (const t of sel.textReadouts) buf += `${t.name}: "${escapeHtml(t.value)}"\n`;
  for (const s of sel.countersAndGauges) {
    buf += `${s.name}: ${s.shown}\n`;
    if (buf.length >= limit) {
      yield buf;
      buf = '';
    }
  }
  const mode = params.histogramBuckets;
  for (const h of sel.histograms) {
    const body =
      mode === 'cumulative' || mode === 'disjoint'
        ? bucketsText(h, mode === 'disjoint', params.buckets.of(h.name))
        : summaryText(h);
    buf += `${h.name}: ${body}\n`;
    if (buf.length >= limit) {
      yield buf;
      buf = '';
    }
  }
  if (buf) yield buf;
}

/** The plain-text `/stats` as one string. */
export function renderText(sel: Selection, params: StatsParams): string {
  return [...textChunks(sel, params)].join('');
}
