/**
 * Log-linear histogram bins with two significant decimal digits (the layout of the
 * reference's circllhist): a positive value `v` falls in `[m/10 * 10^e, (m+1)/10 * 10^e)`
 * with `m` in 10..99. A bin is one integer key, so recording is one `Map` update of a
 * small integer and never allocates once the bin exists. Zero (and negatives, clamped)
 * has its own zero-width bin.
 */

/**
 * Bucket upper bounds of `/stats`' bucket modes, of Prometheus and of the metrics service sink
 * (the reference's defaults).
 */
export const DEFAULT_BUCKETS = [
  0.5, 1, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000, 30000, 60000, 300000, 600000, 1800000,
  3600000,
] as const;

/** Bin counts by key; keys sort in value order. */
export type Bins = Map<number, number>;

const MIN_EXP = -128;
const MAX_EXP = 127;
/** `10^e` as a decimal literal parses, so bin edges match the reference's table exactly. */
const POW10: number[] = [];
for (let e = MIN_EXP; e <= MAX_EXP; e++) POW10.push(Number(`1e${e}`));

const pow10 = (e: number): number => POW10[e - MIN_EXP]!;

/** The bin key of `value`; 0 for zero and anything not positive. */
export function binKey(value: number): number {
  if (!(value > 0)) return 0;
  let e = Math.floor(Math.log10(value));
  if (e < MIN_EXP) return 0;
  if (e > MAX_EXP) e = MAX_EXP;
  let m = Math.floor((value / pow10(e)) * 10);
  // log10 rounding can put the value one decade off; the mantissa says which way.
  if (m >= 100 && e < MAX_EXP) {
    e += 1;
    m = Math.floor((value / pow10(e)) * 10);
  } else if (m < 10 && e > MIN_EXP) {
    e -= 1;
    m = Math.floor((value / pow10(e)) * 10);
  }
  m = Math.min(99, Math.max(10, m));
  return (e - MIN_EXP + 1) * 100 + m;
}

/** Lower edge of the bin `key`. */
export function binLower(key: number): number {
  if (key === 0) return 0;
  return ((key % 100) / 10) * pow10(Math.floor(key / 100) - 1 + MIN_EXP);
}

/** Width of the bin `key` (0 for the zero bin). */
export function binWidth(key: number): number {
  if (key === 0) return 0;
  return pow10(Math.floor(key / 100) - 1 + MIN_EXP) / 10;
}

/** Adds `count` samples to `key`. */
export function addToBin(bins: Bins, key: number, count: number): void {
  bins.set(key, (bins.get(key) ?? 0) + count);
}

/** A new map holding the sum of `a` and `b` (either may be null). */
export function mergeBins(a: Bins | null, b: Bins | null): Bins {
  const out: Bins = new Map(a ?? []);
  if (b) for (const [k, n] of b) addToBin(out, k, n);
  return out;
}

function sortedKeys(bins: Bins): number[] {
  return [...bins.keys()].sort((x, y) => x - y);
}

/**
 * Quantiles (`qs` as fractions, ascending) interpolated linearly inside the bin where the
 * rank falls: the reference's `hist_approx_quantile`. NaN for every quantile when empty.
 */
export function quantiles(bins: Bins | null, qs: readonly number[]): number[] {
  const keys = bins ? sortedKeys(bins).filter((k) => (bins.get(k) ?? 0) > 0) : [];
  if (!bins || keys.length === 0) return qs.map(() => Number.NaN);
  let total = 0;
  for (const k of keys) total += bins.get(k)!;
  const out: number[] = [];
  let i = 0;
  let lower = 0;
  let upper = bins.get(keys[0]!)!;
  for (const q of qs) {
    const rank = total * q;
    while (i < keys.length - 1 && upper < rank) {
      i += 1;
      lower = upper;
      upper = lower + bins.get(keys[i]!)!;
    }
    const left = binLower(keys[i]!);
    const width = binWidth(keys[i]!);
    if (width === 0 || lower === rank) out.push(left);
    else if (upper === rank) out.push(left + width);
    else out.push(left + ((rank - lower) / (upper - lower)) * width);
  }
  return out;
}

/**
 * Counts of samples at or below each bound (`bounds` ascending). A bin counts toward a
 * bound when its lower edge is at or below it, as in the reference's approximation; with
 * integer samples and the default bounds this is exact.
 */
export function cumulativeCounts(bins: Bins | null, bounds: readonly number[]): number[] {
  const out = new Array<number>(bounds.length).fill(0);
  if (!bins) return out;
  for (const [k, n] of bins) {
    const left = binLower(k);
    // bounds are few (19 by default); a linear scan beats a search here
    for (let b = 0; b < bounds.length; b++) {
      if (left <= bounds[b]!) {
        out[b]! += n;
      }
    }
  }
  return out;
}
