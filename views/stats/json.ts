import { bucketCounts, DEFAULT_BUCKETS, histogramQuantiles, JSON_QUANTILES } from './histogram.js';
import type { StatsParams } from './params.js';
import type { Selection } from './select.js';

const num = (x: number): number | null => (Number.isNaN(x) ? null : x);

/**
 * `/stats?format=json`, compact: `{"stats":[...]}` with text readouts, counters and
 * gauges, then one `histograms` element when any histogram is selected (quantile
 * summaries, or bucket lists in the bucket modes).
 */
export function renderJson(sel: Selection, params: StatsParams): string {
  const parts: string[] = [];
  for (const t of sel.textReadouts)
    parts.push(`{"name":${JSON.stringify(t.name)},"value":${JSON.stringify(t.value)}}`);
  for (const s of sel.countersAndGauges) {
    parts.push(`{"name":${JSON.stringify(s.name)},"value":${s.shown}}`);
  }
  if (sel.histograms.length > 0) {
    const mode = params.histogramBuckets;
    if (mode === 'cumulative' || mode === 'disjoint') {
      const hs = sel.histograms.map((h) => {
        const { interval, cumulative } = bucketCounts(h, mode === 'disjoint');
        return {
          name: h.name,
          buckets: DEFAULT_BUCKETS.map((b, i) => ({
            upper_bound: b,
            interval: interval[i],
            cumulative: cumulative[i],
          })),
        };
      });
      parts.push(JSON.stringify({ histograms: hs }));
    } else {
      const computed = sel.histograms.map((h) => {
        if (!h.used) {
          return { name: h.name, values: JSON_QUANTILES.map(() => ({ interval: 0, cumulative: 0 })) };
        }
        const { interval, cumulative } = histogramQuantiles(h, true);
        return {
          name: h.name,
          values: JSON_QUANTILES.map((_, i) => ({
            interval: num(interval[i]!),
            cumulative: num(cumulative[i]!),
          })),
        };
      });
      parts.push(
        JSON.stringify({ histograms: { supported_quantiles: JSON_QUANTILES, computed_quantiles: computed } }),
      );
    }
  }
  return `{"stats":[${parts.join(',')}]}`;
}
