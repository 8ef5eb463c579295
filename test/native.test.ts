import assert from 'node:assert/strict';
import { test } from 'node:test';
import { loadAddon } from '../src/native.js';

test('an addon that was not built is named in the sentence a refusal quotes', () => {
  const missing = loadAddon('no-such-addon');
  assert.equal(typeof missing, 'string');
  assert.match(missing as string, /native\/build\/Release\/no-such-addon\.node was not built/);
});

test('the built addons load by name (npm ci builds them)', () => {
  for (const [name, fn] of [
    ['sockopt', 'originalDst'],
    ['memory', 'mallocTrim'],
    ['memory', 'mallocTrimInBackground'],
    ['memory', 'releaseFilePages'],
  ] as const) {
    const addon = loadAddon<Record<string, unknown>>(name);
    assert.equal(typeof addon, 'object', `${name}: ${addon}`);
    assert.equal(typeof (addon as Record<string, unknown>)[fn], 'function');
  }
});
