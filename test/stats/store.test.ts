import assert from 'node:assert/strict';
import { test } from 'node:test';
import { StatsStore } from '../../src/stats/store.js';

test('Scope.counters: one counter per field, named by its stat name under the scope, the same object scope.counter gives', () => {
  const scope = new StatsStore().scope('http.ingress').scope('ratelimit');
  const stats = scope.counters({ ok: 'ok', overLimit: 'over_limit' });
  assert.deepEqual(Object.keys(stats), ['ok', 'overLimit']);
  assert.equal(stats.overLimit.name, 'http.ingress.ratelimit.over_limit');
  assert.equal(stats.ok, scope.counter('ok'));
  stats.overLimit.inc();
  assert.equal(scope.counter('over_limit').value, 1);
});
