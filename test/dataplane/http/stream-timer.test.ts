import assert from 'node:assert/strict';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { StreamTimer } from '../../../src/dataplane/http/stream-timer.js';

/** A target that records when each kind fired, in ms since `t0`. */
function recorder() {
  const t0 = performance.now();
  const fired: Array<[number, number]> = [];
  return { fired, target: { onTimer: (kind: number) => fired.push([kind, performance.now() - t0]) } };
}

test('an armed timer fires once for its target, with its kind', async () => {
  const timer = new StreamTimer();
  const r = recorder();
  timer.arm(20, r.target, 1);
  assert.equal(timer.armed, true);
  await sleep(80);
  assert.equal(r.fired.length, 1);
  assert.equal(r.fired[0]?.[0], 1);
  assert.equal(timer.armed, false);
  timer.close();
});

test('a disarmed timer fires into nothing; the next target counts from its own arm', async () => {
  const timer = new StreamTimer();
  const first = recorder();
  timer.arm(60, first.target, 0);
  timer.disarm();
  await sleep(30);
  const second = recorder();
  timer.arm(60, second.target, 0);
  // When it fired, not whether it had by some instant: a loaded machine oversleeps any wait.
  for (let waited = 0; second.fired.length === 0 && waited < 2000; waited += 10) await sleep(10);
  assert.equal(first.fired.length, 0);
  assert.equal(second.fired.length, 1);
  // On the first arm it would fire about 30 ms after its own arm.
  assert.ok((second.fired[0]?.[1] ?? 0) >= 55, `the second target fired early: ${second.fired[0]?.[1]} ms`);
  timer.close();
});

test('refresh restarts the count; another duration takes effect; close stops it for good', async () => {
  const timer = new StreamTimer();
  const r = recorder();
  timer.arm(50, r.target, 0);
  await sleep(30);
  timer.refresh();
  await sleep(30); // 60 ms after the arm, 30 after the refresh
  assert.equal(r.fired.length, 0, 'fired before the refreshed count ended');
  await sleep(60);
  assert.equal(r.fired.length, 1);
  const other = recorder();
  timer.arm(10, other.target, 1);
  await sleep(50);
  assert.deepEqual(
    other.fired.map(([kind]) => kind),
    [1],
  );
  timer.arm(20, other.target, 1);
  timer.close();
  await sleep(60);
  assert.equal(other.fired.length, 1, 'a closed timer fired');
});

test('refresh of a disarmed timer does not re-arm it', async () => {
  const timer = new StreamTimer();
  const r = recorder();
  timer.arm(20, r.target, 0);
  timer.disarm();
  timer.refresh();
  await sleep(60);
  assert.equal(r.fired.length, 0);
  assert.equal(timer.armed, false);
  timer.close();
});

test('a shorter timeout armed while a longer one is scheduled fires on its own deadline', async () => {
  // The timer keeps one Timeout and reschedules it only when a deadline comes sooner than it.
  const timer = new StreamTimer();
  const r = recorder();
  timer.arm(60_000, r.target, 0);
  timer.arm(20, r.target, 1);
  await sleep(500);
  assert.deepEqual(
    r.fired.map(([kind]) => kind),
    [1],
  );
  timer.close();
});

test('a count restarted while its Timeout is scheduled fires only once the restarted count ends', async () => {
  const timer = new StreamTimer();
  const r = recorder();
  timer.arm(200, r.target, 0);
  for (let i = 0; i < 4; i++) {
    await sleep(50);
    timer.refresh();
  }
  // At least 200 ms after the arm: the Timeout fired at 200 and rescheduled itself for the rest.
  assert.equal(r.fired.length, 0);
  await sleep(800);
  assert.equal(r.fired.length, 1);
  assert.ok((r.fired[0]?.[1] ?? 0) >= 200 + 4 * 50 - 5, 'fired before the restarted count ended');
  timer.close();
});
