import assert from 'node:assert/strict';
import { test } from 'node:test';
import { compileRegex } from '../../../src/dataplane/router/matchers.js';

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
