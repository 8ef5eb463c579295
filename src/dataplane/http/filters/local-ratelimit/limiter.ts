/**
 * The buckets of one `LocalRateLimit` (the filter's, or a route's own) and the reference's
 * choice among them: a request takes from each configured descriptor its own descriptors match
 * verbatim, strictest first, and is refused by the first that is empty; it takes from the
 * filter's bucket too unless a descriptor matched and `always_consume_default_token_bucket` is
 * false. The buckets are the process's (../../../network-filters/local-ratelimit/bucket.ts).
 */
import {
  sharedClockUs,
  TokenBucket,
  type TokenBucketSpec,
} from '../../../network-filters/local-ratelimit/bucket.js';
import type { Descriptor } from '../ratelimit/route-policy.js';
import type { LocalRateLimitConfig } from './config.js';

/** A request's verdict, and the bucket the draft RateLimit headers describe (null: none). */
export interface Verdict {
  allowed: boolean;
  bucket: TokenBucket | null;
}

/** A descriptor as one string, for verbatim comparison. */
const textOf = (entries: readonly (readonly [string, string])[]) => JSON.stringify(entries);

export class LocalLimiter {
  private readonly bucket: TokenBucket | null;
  /** The configured descriptors' buckets, strictest first, by the descriptor's text. */
  private readonly descriptors: Array<{ text: string; bucket: TokenBucket }>;
  private readonly byText: Map<string, TokenBucket>;

  /**
   * `key` names the buckets: every thread with the same key takes from the same tokens. Not
   * `shared`: buckets of this limiter's own (one connection's), in this thread's memory.
   */
  constructor(
    private readonly config: LocalRateLimitConfig,
    key: string,
    shared = true,
  ) {
    const made = (spec: TokenBucketSpec, name: string) =>
      shared
        ? new TokenBucket(spec, name)
        : new TokenBucket(spec, name, sharedClockUs, { cells: new BigInt64Array(1), index: 0 });
    this.bucket = config.bucket === null ? null : made(config.bucket, key);
    this.descriptors = config.descriptors.map((d, i) => ({
      text: textOf(d.entries),
      bucket: made(d.bucket, `${key}\0descriptor ${i}`),
    }));
    this.byText = new Map(this.descriptors.map((d) => [d.text, d.bucket]));
  }

  decide(request: readonly Descriptor[]): Verdict {
    let matched = false;
    if (this.descriptors.length > 0 && request.length > 0) {
      const wanted = new Set(request.map(textOf));
      for (const d of this.descriptors) {
        if (!wanted.has(d.text)) continue;
        matched = true;
        if (!d.bucket.consume()) return { allowed: false, bucket: this.describing(request) };
      }
    }
    const allowed =
      (matched && !this.config.alwaysConsumeDefault) || this.bucket === null || this.bucket.consume();
    return { allowed, bucket: this.describing(request) };
  }

  /** As the reference: the bucket of the first request descriptor configured, else the filter's. */
  private describing(request: readonly Descriptor[]): TokenBucket | null {
    for (const d of request) {
      const bucket = this.byText.get(textOf(d));
      if (bucket !== undefined) return bucket;
    }
    return this.bucket;
  }
}
