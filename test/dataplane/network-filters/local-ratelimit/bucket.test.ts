/**
 * The token bucket shared by the data-plane threads, on a clock the test moves; its cell is the
 * test's own unless a test names a key (then it is the process's shared table).
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { describe, it } from 'node:test';
import { TokenBucket } from '../../../../src/dataplane/network-filters/local-ratelimit/bucket.js';

function bucket(maxTokens: number, tokensPerFill: number, fillIntervalMs: number) {
  let nowUs = 1e12;
  const b = new TokenBucket({ maxTokens, tokensPerFill, fillIntervalMs }, 'unused', () => nowUs, {
    cells: new BigInt64Array(1),
    index: 0,
  });
  const take = (n: number) => Array.from({ length: n }, () => b.consume()).filter(Boolean).length;
  return { take, advance: (ms: number) => (nowUs += ms * 1000) };
}

describe('TokenBucket', () => {
  it('starts full and gives one token per take until empty', () => {
    const b = bucket(3, 1, 1000);
    assert.equal(b.take(5), 3);
  });

  it('refills continuously at tokens_per_fill per fill_interval, never above max_tokens', () => {
    const b = bucket(3, 2, 1000);
    b.take(3);
    b.advance(499);
    assert.equal(b.take(1), 0, 'under one token');
    b.advance(1);
    assert.equal(b.take(3), 1, 'a token every 500 ms');
    b.advance(10_000);
    assert.equal(b.take(5), 3, 'capped at max_tokens');
  });

  it('keeps the part of a token that grew before a take (below max_tokens)', () => {
    const b = bucket(2, 1, 1000);
    b.take(2);
    b.advance(1500);
    assert.equal(b.take(1), 1);
    b.advance(500);
    assert.equal(b.take(1), 1, 'the second token was whole 2000 ms after the start');
  });

  it('two buckets of one key take from the same tokens (two threads of one process)', () => {
    const key = `test ${randomUUID()}`;
    const spec = { maxTokens: 3, tokensPerFill: 1, fillIntervalMs: 3_600_000 };
    const a = new TokenBucket(spec, key);
    const b = new TokenBucket(spec, key);
    const other = new TokenBucket(spec, `${key} other`);
    assert.deepEqual(
      [a.consume(), b.consume(), a.consume(), b.consume(), a.consume()],
      [true, true, true, false, false],
    );
    assert.equal(other.consume(), true, 'another key is another bucket');
  });

  it('a swap lost to another thread is retried against what that thread wrote', () => {
    const key = `test ${randomUUID()}`;
    const spec = { maxTokens: 2, tokensPerFill: 1, fillIntervalMs: 3_600_000 };
    const a = new TokenBucket(spec, key);
    const b = new TokenBucket(spec, key);
    assert.equal(a.consume(), true);
    // b's cached view is stale (the full mark): its swap fails once, then it takes the last token.
    assert.equal(b.consume(), true);
    assert.equal(a.consume(), false, 'a sees what b took');
  });
});
