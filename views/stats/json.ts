import type { HistogramBuckets } from '../../src/stats/buckets.js';
import type { Histogram } from '../../src/stats/store.js';
import { CHUNK_CHARS } from '../json-chunks.js';
import { bucketCounts, histogramQuantiles, JSON_QUANTILES } from './histogram.js';
import type { StatsParams } from './params.js';
import type { Selection } from './select.js';

const num = (x: number): number | null => (Number.isNaN(x) ? null : x);

/**
 * `/stats?format=json`, compact: `{"stats":[...]}` with text readouts, counters and
 * gauges, then one `histograms` element when any histogram is selected (quantile
 * summaries, or bucket lists in the bucket modes); in pieces of about `limit` characters.
 */
export function* jsonStatsChunks(
  sel: Selection,
  params: StatsParams,
  limit = CHUNK_CHARS,
): Generator<string> {
  let buf = '{"stats":[';
  let sep = '';
  for (const t of sel.textReadouts) {
    buf += `${sep}{"name":${JSON.stringify(t.name)},"value":${JSON.stringify(t.value)}}`;
    sep = ',';
  }
  for (const s of sel.countersAndGauges) {
    buf += `${sep}{"name":${quoted(s.name)},"value":${s.shown}}`;
    sep = ',';
    if (buf.length >= limit) {
      yield buf;
      buf = '';
    }
  }
  if (sel.histograms.length > 0) {
    yield `${buf}${sep}`;
    yield* histogramsJson(sel, params, limit);
    buf = '';
  }
  yield `${buf}]}`;
}

/** Anything but what JSON writes as is: a quote, a backslash, control characters, surrogates. */
const NEEDS_ESCAPE = /[^ !#-[\]-\ud7ff\ue000-\uffff]/;

/** A stat name as a JSON string: most need no escaping, and JSON.stringify is the slow way to learn that. */
const quoted = (name: string): string => (NEEDS_ESCAPE.test(name) ? JSON.stringify(name) : `"${name}"`);

const bucketed = (mode: StatsParams['histogramBuckets']): boolean =>
  mode === 'cumulative' || mode === 'disjoint';

/** One histogram's JSON element: bucket lists in the bucket modes, else quantiles. */
function histogramValue(
  h: Histogram,
  mode: StatsParams['histogramBuckets'],
  layout: HistogramBuckets,
): object {
  if (bucketed(mode)) {
    const bounds = layout.of(h.name);
    const { interval, cumulative } = bucketCounts(h, mode === 'disjoint', bounds);
    return {
      name: h.name,
      buckets: bounds.map((b, i) => ({
        upper_bound: b,
        interval: interval[i],
        cumulative: cumulative[i],
      })),
    };
  }
  if (!h.used) return { name: h.name, values: JSON_QUANTILES.map(() => ({ interval: 0, cumulative: 0 })) };
  const { interval, cumulative } = histogramQuantiles(h, true);
  return {
    name: h.name,
    values: JSON_QUANTILES.map((_, i) => ({
      interval: num(interval[i]!),
      cumulative: num(cumulative[i]!),
    })),
  };
}

/** What `jsonStatsChunks` writes, as data (the debug bundle's form). */
export function jsonStatsData(sel: Selection, params: StatsParams): { stats: unknown[] } {
  const stats: unknown[] = sel.textReadouts.map((t) => ({ name: t.name, value: t.value }));
  for (const s of sel.countersAndGauges) stats.push({ name: s.name, value: s.shown });
  if (sel.histograms.length > 0) {
    const mode = params.histogramBuckets;
    const values = sel.histograms.map((h) => histogramValue(h, mode, params.buckets));
    stats.push({
      histograms: bucketed(mode)
        ? values
        : { supported_quantiles: JSON_QUANTILES, computed_quantiles: values },
    });
  }
  return { stats };
}

/**
 * The `histograms` element, histogram by histogram: the text `JSON.stringify` gives for
 * `{histograms: [...]}` (bucket modes) or `{histograms: {supported_quantiles, computed_quantiles}}`.
 */
function* histogramsJson(sel: Selection, params: StatsParams, limit: number): Generator<string> {
  const mode = params.histogramBuckets;
  let buf = bucketed(mode)
    ? '{"histograms":['
    : `{"histograms":{"supported_quantiles":${JSON.stringify(JSON_QUANTILES)},"computed_quantiles":[`;
  let sep = '';
  for (const h of sel.histograms) {
    buf += `${sep}${JSON.stringify(histogramValue(h, mode, params.buckets))}`;
    sep = ',';
    if (buf.length >= limit) {
      yield buf;
      buf = '';
    }
  }
  yield `${buf}${bucketed(mode) ? ']}' : ']}}'}`;
}
