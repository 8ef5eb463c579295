import assert from 'node:assert/strict';
import { test } from 'node:test';
import { freeRe2, fullMatchRe2 } from '../src/re2.js';

test('fullMatchRe2 anchors both ends and refuses a pattern that would escape them', () => {
  const re = fullMatchRe2('a|b');
  assert.equal(re.test('a'), true);
  assert.equal(re.test('ab'), false);
  freeRe2(re);
  assert.throws(() => fullMatchRe2('a)|(b'), SyntaxError);
});

test('patterns compiled and freed per request never exhaust the WASM heap', () => {
  // Two compiles each: 20,000 in all, past the ~13,000 that exhaust the heap without frees.
  for (let i = 0; i < 10_000; i++) freeRe2(fullMatchRe2(`c${i}`));
  assert.throws(
    () => fullMatchRe2('('),
    SyntaxError,
    'an invalid pattern is still a SyntaxError, not an abort',
  );
  const re = fullMatchRe2('cluster\\.[a-z]+');
  assert.equal(re.test('cluster.web'), true);
  freeRe2(re);
});
