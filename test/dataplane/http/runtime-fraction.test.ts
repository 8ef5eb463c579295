/**
 * `RuntimeFractionalPercent` as the CORS and CSRF filters evaluate it: the default share,
 * replaced by an integer percentage or a static-layer fraction under the runtime key.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import {
  compileRuntimeFraction,
  fractionEnabled,
  type RuntimeLookup,
} from '../../../src/dataplane/http/runtime-fraction.js';
import { compiled, findingsOf } from '../../helpers/compile.js';

const fraction = (raw: Record<string, unknown>) =>
  compiled((report) => compileRuntimeFraction(raw as never, 'f', report));

const runtimeOf =
  (values: Record<string, string>): RuntimeLookup =>
  (key) =>
    values[key];

/** How many of the draws 0..n-1 fall in the fraction. */
const share = (f: ReturnType<typeof fraction>, runtime: RuntimeLookup, n: number) =>
  Array.from({ length: n }, (_, i) => fractionEnabled(f, runtime, i)).filter(Boolean).length;

describe('runtime fractions', () => {
  it('the default applies when the key is unset, over a whole denominator exactly', () => {
    const f = fraction({ default_value: { numerator: 25, denominator: 'TEN_THOUSAND' }, runtime_key: 'k' });
    assert.equal(share(f, runtimeOf({}), 10_000), 25);
    const hundred = fraction({ default_value: { numerator: 30 } });
    assert.equal(share(hundred, runtimeOf({}), 100), 30, 'the denominator defaults to HUNDRED');
  });

  it('an integer under the key is a percentage, above 100 always on; other text keeps the default', () => {
    const f = fraction({ default_value: { numerator: 0, denominator: 'MILLION' }, runtime_key: 'k' });
    assert.equal(share(f, runtimeOf({ k: '40' }), 100), 40);
    assert.equal(share(f, runtimeOf({ k: '250' }), 100), 100);
    assert.equal(share(f, runtimeOf({ k: 'lots' }), 100), 0);
  });

  it('a fraction written in a static layer (flattened to key.numerator/.denominator) replaces the default', () => {
    const f = fraction({ default_value: { numerator: 100 }, runtime_key: 'k' });
    const runtime = runtimeOf({ 'k.numerator': '5', 'k.denominator': 'TEN_THOUSAND' });
    assert.equal(share(f, runtime, 10_000), 5);
  });

  it('numerators at or above the denominator are always on, 0 never', () => {
    fc.assert(
      fc.property(fc.nat(), fc.nat({ max: 300 }), (draw, numerator) => {
        const f = fraction({ default_value: { numerator } });
        const on = fractionEnabled(f, runtimeOf({}), draw);
        if (numerator >= 100) assert.equal(on, true);
        if (numerator === 0) assert.equal(on, false);
      }),
      { seed: 42, numRuns: 200 },
    );
  });

  it('refuses a fraction without its default, naming the field', () => {
    assert.deepEqual(
      findingsOf((report) => compileRuntimeFraction({ runtime_key: 'k' }, 'x.filter_enabled', report)).map(
        (e) => e.includes('x.filter_enabled.default_value'),
      ),
      [true],
    );
  });
});
