import assert from 'node:assert/strict';
import { test } from 'node:test';
import { compileRegex } from '../../src/config/matchers.js';

test('safe_regex is a full match, and a pattern cannot break out of the anchors', () => {
  const either = compileRegex('a|b', 'route.match.safe_regex');
  assert.equal(either('a'), true);
  assert.equal(either('ab'), false, 'anchored at both ends');
  assert.throws(() => compileRegex('a)|(b', 'route.match.safe_regex'), /invalid regex 'a\)\|\(b'/);
  assert.throws(
    () => compileRegex('(?=a)', 'route.match.safe_regex'),
    /invalid regex/,
    'no lookaround in RE2',
  );
});

test('a catastrophic safe_regex matches in linear time', () => {
  const evil = compileRegex('([a-z]+)+!', 'route.match.safe_regex');
  const started = performance.now();
  assert.equal(evil('a'.repeat(5000)), false);
  assert.equal(evil(`${'a'.repeat(5000)}!`), true);
  assert.ok(performance.now() - started < 500);
});

test('recompiling the same patterns (a route update) does not use up the RE2 heap', () => {
  // ~13,000 leaked compiles exhaust re2-wasm's heap; 20,000 recompiles of 10 patterns must not.
  for (let i = 0; i < 20_000; i++) compileRegex(`/api/v${i % 10}/.*`, 'route.match.safe_regex');
  assert.equal(compileRegex('/api/v3/.*', 'x')('/api/v3/users'), true);
  assert.equal(compileRegex('fresh|new', 'x')('new'), true, 'a new pattern still compiles');
});
