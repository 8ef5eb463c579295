/**
 * The reference's token bucket for connections: it starts full; every `fillIntervalMs` it gains
 * `tokensPerFill`, up to `maxTokens`; each connection takes one. Refilled when asked rather than
 * by a timer, from whole intervals since the last fill, so an idle listener runs nothing.
 * `tokensPerFill` may be a fraction (a worker's share of a fill): a connection needs a whole token.
 */
export interface TokenBucketSpec {
  maxTokens: number;
  tokensPerFill: number;
  fillIntervalMs: number;
}

export class TokenBucket {
  private tokens: number;
  private lastFill: number;

  constructor(
    private readonly spec: TokenBucketSpec,
    private readonly now: () => number,
  ) {
    this.tokens = spec.maxTokens;
    this.lastFill = now();
  }

  /** Takes a token; false when none is left. */
  consume(): boolean {
    const now = this.now();
    const fills = Math.floor((now - this.lastFill) / this.spec.fillIntervalMs);
    if (fills > 0) {
      this.tokens = Math.min(this.spec.maxTokens, this.tokens + fills * this.spec.tokensPerFill);
      this.lastFill += fills * this.spec.fillIntervalMs;
    }
    if (this.tokens < 1) return false;
    this.tokens -= 1;
    return true;
  }
}
