/**
 * The choice of a response's encoding from `Accept-Encoding`, as the reference's compressor
 * filters make it: the cases its documentation names, and a property test over hostile header
 * values (it never throws, and never picks what the client refused or the chain lacks).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { chooseEncoding } from '../../../../../src/dataplane/http/filters/compressor/accept-encoding.js';

const GZIP = [{ encoding: 'gzip', chooseFirst: false }];
const BOTH = [
  { encoding: 'gzip', chooseFirst: false },
  { encoding: 'br', chooseFirst: false },
];

describe('chooseEncoding', () => {
  it("follows the reference's documented cases", () => {
    const cases: Array<[string, typeof GZIP, string, string]> = [
      ['gzip', GZIP, 'gzip', 'valid'],
      ['deflate, gzip, br, zstd', GZIP, 'gzip', 'valid'],
      ['gzip;q=0,*;q=1', GZIP, 'identity', 'not_valid'],
      ['*;q=0,gzip;q=1', GZIP, 'gzip', 'valid'],
      ['*', GZIP, 'gzip', 'wildcard'],
      ['identity', GZIP, 'identity', 'identity'],
      ['identity;q=1, gzip;q=0.5', GZIP, 'identity', 'identity'],
      ['deflate', GZIP, 'identity', 'not_valid'],
      ['', GZIP, 'identity', 'not_valid'],
      ['gzip', [], 'identity', 'not_valid'],
      // The highest q-value among what both have; a tie goes to the first the client named.
      ['gzip;q=0.5, br;q=0.9', BOTH, 'br', 'valid'],
      ['br, gzip', BOTH, 'br', 'valid'],
      ['gzip, br', BOTH, 'gzip', 'valid'],
      // `*` is the chain's first compressor; a refused one is not brought back by it.
      ['*', BOTH, 'gzip', 'wildcard'],
      ['gzip;q=0, *', BOTH, 'br', 'wildcard'],
      // An unparsable q-value drops its entry; other parameters do not weigh.
      ['gzip;q=x, br;q=0.1', BOTH, 'br', 'valid'],
      ['gzip;level=1', GZIP, 'gzip', 'valid'],
      ['GZIP ; Q=0.4', GZIP, 'gzip', 'valid'],
    ];
    for (const [header, candidates, encoding, verdict] of cases)
      assert.deepEqual(chooseEncoding(header, candidates), { encoding, verdict }, header);
  });

  it('gives a tie to a compressor with choose_first', () => {
    const chain = [
      { encoding: 'gzip', chooseFirst: false },
      { encoding: 'br', chooseFirst: true },
    ];
    assert.deepEqual(chooseEncoding('gzip, br', chain), { encoding: 'br', verdict: 'valid' });
    assert.deepEqual(chooseEncoding('gzip;q=1, br;q=0.5', chain), { encoding: 'gzip', verdict: 'valid' });
  });

  it('never throws on a hostile header, never picks a refused or missing encoding', () => {
    const coding = fc.constantFrom('gzip', 'br', 'zstd', 'identity', '*', 'deflate', '', ' ', 'x;y');
    const q = fc.constantFrom(
      '',
      ';q=0',
      ';q=1',
      ';q=0.5',
      ';q=',
      ';q=abc',
      ';Q=1e-3',
      ';q=-1',
      ';=1',
      ';q=0.0',
    );
    const header = fc.oneof(
      fc.array(fc.tuple(coding, q).map(([c, w]) => c + w)).map((entries) => entries.join(',')),
      fc.string({ maxLength: 200 }),
    );
    fc.assert(
      fc.property(header, (value) => {
        const { encoding, verdict } = chooseEncoding(value, BOTH);
        if (encoding === 'identity') return;
        assert.ok(['gzip', 'br'].includes(encoding), encoding);
        assert.ok(verdict === 'valid' || verdict === 'wildcard', verdict);
        const refused = new RegExp(`(^|,)\\s*${encoding}\\s*;\\s*q\\s*=\\s*0(\\.0*)?\\s*(,|$)`, 'i');
        assert.ok(!refused.test(value), `${encoding} was refused in ${JSON.stringify(value)}`);
      }),
      { seed: 17, numRuns: Number(process.env.FUZZ_RUNS ?? 500) },
    );
  });
});
