/**
 * The reference's token bucket, shared by every data-plane thread of the process as the
 * reference's is shared by its workers: it starts full with `maxTokens`, gains `tokensPerFill`
 * every `fillIntervalMs` (continuously, as the reference's timer-free bucket: a token every
 * `fillIntervalMs / tokensPerFill`), never above `maxTokens`; each request or connection takes one.
 *
 * The whole state is one 64-bit cell (../../workers/shared-buckets.ts): the time, in
 * microseconds, at which the bucket was (or would have been) empty. The tokens at `now` are
 * `(now - emptyAt) / perToken`, capped at `maxTokens`; taking one moves `emptyAt` on by
 * `perToken`. So a take is one compare-and-swap, refilling is arithmetic on the clock, and no
 * thread runs a timer. 0 marks a bucket no thread took from yet (full).
 */
import { performance } from 'node:perf_hooks';
import { type BucketCell, bucketCell } from '../../workers/shared-buckets.js';

export interface TokenBucketSpec {
  maxTokens: number;
  tokensPerFill: number;
  fillIntervalMs: number;
}

/**
 * Microseconds on a clock every thread shares: each thread's `performance.now()` counts from
 * its own start, `timeOrigin` says when that was.
 */
export function sharedClockUs(): number {
  return Math.round((performance.timeOrigin + performance.now()) * 1000);
}

export class TokenBucket {
  private readonly perTokenUs: number;
  private readonly fullSpanUs: number;
  readonly maxTokens: number;
  /** What this thread last saw in the cell: the expected value of the next swap. */
  private seen = 0n;
  private readonly cells: BigInt64Array;
  private readonly index: number;

  /** `key` names the bucket: every thread asking with the same key takes from the same tokens. */
  constructor(
    spec: TokenBucketSpec,
    key: string,
    private readonly now: () => number = sharedClockUs,
    cell: BucketCell = bucketCell(key),
  ) {
    this.perTokenUs = (spec.fillIntervalMs * 1000) / spec.tokensPerFill;
    this.fullSpanUs = spec.maxTokens * this.perTokenUs;
    this.maxTokens = spec.maxTokens;
    this.cells = cell.cells;
    this.index = cell.index;
  }

  /** Takes a token; false when none is left. */
  consume(): boolean {
    const now = this.now();
    const floor = now - this.fullSpanUs;
    let seen = this.seen;
    for (;;) {
      const emptyAt = seen === 0n ? floor : Math.max(Number(seen), floor);
      const next = emptyAt + this.perTokenUs;
      if (next > now) {
        this.seen = seen;
        return false;
      }
      // Never 0 (the full mark): a clock at 0 µs is long past.
      const held = Atomics.compareExchange(this.cells, this.index, seen, BigInt(Math.round(next)));
      if (held === seen) {
        this.seen = BigInt(Math.round(next));
        return true;
      }
      seen = held;
    }
  }

  /**
   * What the bucket holds now, for the draft RateLimit headers: whole tokens, and the
   * milliseconds until the next one (0 while it holds one).
   */
  level(): { tokens: number; msToNext: number } {
    const now = this.now();
    const cell = Atomics.load(this.cells, this.index);
    const floor = now - this.fullSpanUs;
    const emptyAt = cell === 0n ? floor : Math.max(Number(cell), floor);
    // The clock is microseconds since 1970 in a double: a hair of rounding must not lose a token.
    const tokens = Math.min(this.maxTokens, Math.floor((now - emptyAt) / this.perTokenUs + 1e-6));
    return {
      tokens,
      msToNext: tokens >= 1 ? 0 : (emptyAt + this.perTokenUs - now) / 1000,
    };
  }
}
