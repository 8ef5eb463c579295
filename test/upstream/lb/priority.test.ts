import assert from 'node:assert/strict';
import { test } from 'node:test';
import { choosePriority, groupByPriority, priorityLoads } from '../../../src/upstream/lb/priority.js';
import { upstreamHost } from '../../helpers/upstream.js';

/** `healthy` healthy, `degraded` degraded and the rest failing hosts at one priority, `total` in all. */
function level(priority: number, total: number, healthy: number, degraded = 0) {
  return Array.from({ length: total }, (_, i) =>
    upstreamHost(`10.${priority}.0.${i + 1}:80`, {
      priority,
      failed: i >= healthy + degraded,
      edsHealth: i >= healthy && i < healthy + degraded ? 'DEGRADED' : 'UNKNOWN',
    }),
  );
}

test('all healthy: priority 0 takes everything', () => {
  const loads = priorityLoads(groupByPriority([...level(0, 3, 3), ...level(1, 3, 3)]), 50);
  assert.deepEqual(loads.healthyLoad, [100, 0]);
  assert.deepEqual(loads.panic, [false, false]);
});

test("the reference's worked example: 16/28/14 healthy and 28/14/0 degraded", () => {
  // 14 hosts per priority: health = 140 * healthy / 14 = 10 per healthy host.
  const hosts = [...level(0, 14, 1, 2), ...level(1, 14, 2, 1), ...level(2, 14, 1, 0)];
  // Panic disabled: every priority here is below 50% available.
  const loads = priorityLoads(groupByPriority(hosts), 0);
  assert.deepEqual(loads.healthyLoad, [16, 28, 14]);
  assert.deepEqual(loads.degradedLoad, [28, 14, 0]);
});

test('spill-over: a partly healthy priority keeps its overprovisioned share', () => {
  const loads = priorityLoads(groupByPriority([...level(0, 4, 1), ...level(1, 2, 2)]), 50);
  assert.deepEqual(loads.healthyLoad, [35, 65]);
  assert.deepEqual(loads.panic, [false, false], 'no panic while the total availability is 100');
  assert.equal(choosePriority(loads, 35), 0);
  assert.equal(choosePriority(loads, 36), 2, 'priority 1, healthy hosts');
});

test('panic when healthy share is below the threshold, and total panic spreads by host count', () => {
  const loads = priorityLoads(groupByPriority([...level(0, 4, 1), ...level(1, 4, 0)]), 50);
  assert.deepEqual(loads.panic, [true, true]);
  assert.deepEqual(loads.healthyLoad, [50, 50]);
  const none = priorityLoads(groupByPriority(level(0, 4, 0)), 0);
  assert.deepEqual(none.healthyLoad, [100], 'threshold 0 and nothing available: priority 0 takes it');
  assert.deepEqual(none.panic, [false]);
});

test('degraded hosts take the load when nothing is healthy', () => {
  const loads = priorityLoads(groupByPriority(level(0, 2, 0, 1)), 50);
  assert.deepEqual(loads.healthyLoad, [0]);
  assert.deepEqual(loads.degradedLoad, [100]);
  assert.equal(choosePriority(loads, 1), 1, 'priority 0, degraded hosts');
});
