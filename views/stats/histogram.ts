import { cumulativeCounts, quantiles } from '../../src/stats/bins.js';
import type { Histogram } from '../../src/stats/store.js';

/**
 * Quantiles the text format prints: the reference's ten (the spec's list omits P95 and
 * P99.5 from its prose; we print what the reference prints, see docs/stats.md).
 */
export const TEXT_QUANTILES = [0, 25, 50, 75, 90, 95, 99, 99.5, 99.9, 100] as const;
/** `supported_quantiles` of the JSON format: exactly the spec's nine. */
export const JSON_QUANTILES = [0, 25, 50, 75, 90, 95, 99, 99.9, 100] as const;

const TEXT_FRACTIONS = TEXT_QUANTILES.map((q) => q / 100);
const JSON_FRACTIONS = JSON_QUANTILES.map((q) => q / 100);

/** Shortest round-trip form, `nan` for NaN (the reference's fmt output). */
export function formatNumber(x: number): string {
  return Number.isNaN(x) ? 'nan' : String(x);
}

/** Interval and cumulative quantiles (NaN where a window is empty). */
export function histogramQuantiles(
  h: Histogram,
  json: boolean,
): { interval: number[]; cumulative: number[] } {
  const fractions = json ? JSON_FRACTIONS : TEXT_FRACTIONS;
  return {
    interval: quantiles(h.interval?.bins ?? null, fractions),
    cumulative: quantiles(h.cumulativeWindow()?.bins ?? null, fractions),
  };
}

/** `P0(i,c) P25(i,c) ...`, or `No recorded values`. */
export function summaryText(h: Histogram): string {
  if (!h.used) return 'No recorded values';
  const { interval, cumulative } = histogramQuantiles(h, false);
  const parts: string[] = [];
  for (let i = 0; i < TEXT_QUANTILES.length; i++) {
    parts.push(`P${TEXT_QUANTILES[i]}(${formatNumber(interval[i]!)},${formatNumber(cumulative[i]!)})`);
  }
  return parts.join(' ');
}

/** Interval and cumulative counts per bound of `bounds`; `disjoint` counts each bucket alone. */
export function bucketCounts(
  h: Histogram,
  disjoint: boolean,
  bounds: readonly number[],
): { interval: number[]; cumulative: number[] } {
  const interval = cumulativeCounts(h.interval?.bins ?? null, bounds);
  const cumulative = cumulativeCounts(h.cumulativeWindow()?.bins ?? null, bounds);
  if (disjoint) {
    for (const list of [interval, cumulative]) {
      for (let i = list.length - 1; i > 0; i--) list[i]! -= list[i - 1]!;
    }
  }
  return { interval, cumulative };
}

/** `B0.5(i,c) B1(i,c) ...` for the bounds `bounds`, or `No recorded values`. */
export function bucketsText(h: Histogram, disjoint: boolean, bounds: readonly number[]): string {
  if (!h.used) return 'No recorded values';
  const { interval, cumulative } = bucketCounts(h, disjoint, bounds);
  return bounds.map((b, i) => `B${b}(${interval[i]},${cumulative[i]})`).join(' ');
}
