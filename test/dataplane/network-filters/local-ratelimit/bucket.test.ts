/** The connection token bucket, on a clock the test moves. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { TokenBucket } from '../../../../src/dataplane/network-filters/local-ratelimit/bucket.js';

function bucket(maxTokens: number, tokensPerFill: number, fillIntervalMs: number) {
  let now = 1000;
  const b = new TokenBucket({ maxTokens, tokensPerFill, fillIntervalMs }, () => now);
  const take = (n: number) => Array.from({ length: n }, () => b.consume()).filter(Boolean).length;
  return { take, advance: (ms: number) => (now += ms) };
}

describe('TokenBucket', () => {
  it('starts full and gives one token per connection until empty', () => {
    const b = bucket(3, 1, 1000);
    assert.equal(b.take(5), 3);
  });

  it('refills by whole intervals only, and never above max_tokens', () => {
    const b = bucket(3, 2, 1000);
    b.take(3);
    b.advance(999);
    assert.equal(b.take(1), 0, 'no fill before the interval ends');
    b.advance(1);
    assert.equal(b.take(3), 2, 'one fill');
    b.advance(10_000);
    assert.equal(b.take(5), 3, 'ten fills, capped at max_tokens');
  });

  it('keeps the part of an interval that passed before a refill', () => {
    const b = bucket(1, 1, 1000);
    b.take(1);
    b.advance(1500);
    assert.equal(b.take(1), 1);
    b.advance(500);
    assert.equal(b.take(1), 1, 'the second interval ended 2000 ms after the start');
  });

  it('adds a fractional share of each fill up to whole tokens (a worker thread of two)', () => {
    const b = bucket(1, 0.5, 1000);
    b.take(1);
    b.advance(1000);
    assert.equal(b.take(1), 0, 'half a token');
    b.advance(1000);
    assert.equal(b.take(1), 1);
  });

  it('never admits with no tokens (a worker whose share of max_tokens is 0)', () => {
    const b = bucket(0, 0.5, 1000);
    b.advance(10_000);
    assert.equal(b.take(3), 0);
  });
});
