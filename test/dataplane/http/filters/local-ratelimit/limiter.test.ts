/**
 * The local rate limit's choice among its buckets, as the reference's limiter makes it: every
 * configured descriptor a request's descriptors match verbatim takes a token, strictest first,
 * and the first empty one refuses it; the filter's bucket takes one too unless a descriptor
 * matched and `always_consume_default_token_bucket` is false.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { LocalRateLimitConfig } from '../../../../../src/dataplane/http/filters/local-ratelimit/config.js';
import { LocalLimiter } from '../../../../../src/dataplane/http/filters/local-ratelimit/limiter.js';

const HOUR = 3_600_000;
const bucket = (maxTokens: number) => ({ maxTokens, tokensPerFill: 1, fillIntervalMs: HOUR });

let keys = 0;
/** A limiter with fresh buckets (the process's cells are keyed by name). */
function limiter(over: Partial<LocalRateLimitConfig>): LocalLimiter {
  const config: LocalRateLimitConfig = {
    statPrefix: 'p',
    status: 429,
    bucket: bucket(100),
    enabled: null,
    enforced: null,
    responseHeaders: [],
    requestHeadersWhenNotEnforced: [],
    descriptors: [],
    stage: 0,
    vhRateLimits: 'OVERRIDE',
    alwaysConsumeDefault: true,
    rateLimitHeaders: false,
    perConnection: false,
    resourceExhausted: false,
    routeAt: '',
    ...over,
  };
  keys += 1;
  return new LocalLimiter(config, `limiter test ${keys} ${process.pid}`);
}

const allowedOf = (l: LocalLimiter, request: Array<Array<[string, string]>>, times: number) =>
  Array.from({ length: times }, () => l.decide(request).allowed);

describe('LocalLimiter', () => {
  it("takes from the filter's bucket when no descriptor matches, even a partial one", () => {
    const l = limiter({
      bucket: bucket(2),
      descriptors: [
        {
          entries: [
            ['a', '1'],
            ['b', '2'],
          ],
          bucket: bucket(5),
        },
      ],
    });
    assert.deepEqual(allowedOf(l, [[['a', '1']]], 3), [true, true, false]);
  });

  it("takes from a matching descriptor's bucket and, by default, the filter's too", () => {
    const l = limiter({ bucket: bucket(3), descriptors: [{ entries: [['a', '1']], bucket: bucket(5) }] });
    assert.deepEqual(allowedOf(l, [[['a', '1']]], 4), [true, true, true, false]);
    // As the reference's: the descriptor's token goes before the filter's bucket refuses.
    const verdict = l.decide([[['a', '1']]]);
    assert.equal(verdict.allowed, false);
    assert.equal(verdict.bucket?.maxTokens, 5, 'the headers describe the matched descriptor');
    assert.equal(verdict.bucket?.level().tokens, 0);
  });

  it('with always_consume_default_token_bucket false, a matched request leaves the filter bucket alone', () => {
    const l = limiter({
      bucket: bucket(1),
      alwaysConsumeDefault: false,
      descriptors: [{ entries: [['a', '1']], bucket: bucket(3) }],
    });
    assert.deepEqual(allowedOf(l, [[['a', '1']]], 4), [true, true, true, false]);
    assert.deepEqual(allowedOf(l, [], 2), [true, false]);
  });

  it('takes from every matched descriptor, strictest first, and stops at the first empty one', () => {
    const strict = { entries: [['k', 'strict']] as Array<[string, string]>, bucket: bucket(1) };
    const loose = { entries: [['k', 'loose']] as Array<[string, string]>, bucket: bucket(10) };
    // The compile step sorts them strictest first; the request names them the other way round.
    const l = limiter({ descriptors: [strict, loose] });
    const both = [[['k', 'loose']], [['k', 'strict']]] as Array<Array<[string, string]>>;
    assert.deepEqual(allowedOf(l, both, 2), [true, false]);
    const looseOnly = l.decide([[['k', 'loose']]]);
    assert.equal(looseOnly.allowed, true);
    assert.equal(
      looseOnly.bucket?.level().tokens,
      8,
      'the refused request took nothing from the looser bucket',
    );
  });

  it('allows every request with no bucket of its own and no descriptor matched', () => {
    const l = limiter({ bucket: null });
    assert.deepEqual(allowedOf(l, [], 5), [true, true, true, true, true]);
    assert.equal(l.decide([]).bucket, null);
  });
});
