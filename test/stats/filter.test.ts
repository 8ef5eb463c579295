import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { RE2 } from 're2-wasm';
import { compileFilter } from '../../src/stats/filter.js';

/** Pattern pieces: literal text, escapes, anchors and a few operators, so both paths are drawn. */
const piece = fc.constantFrom(
  'a',
  'b',
  '.',
  '_',
  'cluster',
  '\\.',
  '\\_',
  '^',
  '$',
  '\\$',
  '\\^',
  '*',
  '+',
  '(',
  ')',
  '|',
  '[a]',
  '\\d',
  'é',
);
const names = fc.array(fc.stringMatching(/^[ab._$^é]{0,8}$/), { minLength: 1, maxLength: 8 });

test('compileFilter agrees with RE2 partial matching on every pattern RE2 accepts', () => {
  fc.assert(
    fc.property(fc.array(piece, { maxLength: 6 }), names, (pieces, candidates) => {
      const pattern = pieces.join('');
      let re: RE2;
      try {
        re = new RE2(pattern, 'u');
      } catch {
        assert.equal(compileFilter(pattern), null, `RE2 refuses ${pattern}; so must the filter`);
        return;
      }
      const filter = compileFilter(pattern);
      assert.ok(filter, `RE2 accepts ${pattern}`);
      for (const name of [...candidates, pattern])
        assert.equal(filter(name), re.test(name), `${pattern} on ${name}`);
    }),
    { seed: 11, numRuns: Number(process.env.FUZZ_RUNS ?? 300) },
  );
});

test('a catastrophic pattern runs in linear time', () => {
  const filter = compileFilter('^([a-z_.]+)+!$');
  assert.ok(filter);
  const started = performance.now();
  assert.equal(filter('cluster.some_long_cluster_name.upstream_cx_connect_timeout'), false);
  assert.ok(performance.now() - started < 500);
});

test('RE2 memory is returned: 20,000 distinct filters leave RE2 able to compile', () => {
  // re2-wasm's heap is 16 MiB and never grows; without frees, ~13,000 such patterns exhaust
  // it and every later compile aborts for the life of the process.
  for (let i = 0; i < 20_000; i++) assert.ok(compileFilter(`c${i}|d`));
  const last = compileFilter('^server\\.(live|state)$');
  assert.ok(last);
  assert.equal(last('server.live'), true);
  assert.equal(last('server.lives'), false);
});
