/**
 * A stream's timers (src/dataplane/http/stream-timers.ts), one set lent to each stream in turn:
 * which arm for a stream, what stops them, and that a set's next stream starts afresh. Timings
 * only bound how long a test waits: a timer that must not fire is checked well after its time.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  DURATION_TIMEOUT,
  IDLE_TIMEOUT,
  REQUEST_TIMEOUT,
  StreamTimers,
} from '../../../src/dataplane/http/stream-timers.js';
import type { HcmTimeouts } from '../../../src/dataplane/http/timeouts.js';

function timeouts(requestMs: number, streamIdleMs: number, maxStreamDurationMs = 0): HcmTimeouts {
  return {
    requestMs,
    streamIdleMs,
    connectionIdleMs: 0,
    maxConnectionDurationMs: 0,
    maxStreamDurationMs,
    delayedCloseMs: 0,
    requestHeadersMs: 0,
    headDeadlineMs: 0,
  };
}

function recorder() {
  const fired: number[] = [];
  return { fired, onTimer: (kind: number) => fired.push(kind) };
}

async function until(check: () => boolean, ms = 2000): Promise<boolean> {
  const deadline = Date.now() + ms;
  while (!check() && Date.now() < deadline) await sleep(5);
  return check();
}

test('a stream with a body gets both the request and the idle timeout; one without, the idle one only', async () => {
  const timers = new StreamTimers();
  const withBody = recorder();
  timers.begin(withBody, timeouts(10, 30), true);
  assert.equal(await until(() => withBody.fired.length === 2), true);
  assert.deepEqual(withBody.fired, [REQUEST_TIMEOUT, IDLE_TIMEOUT]);
  timers.end();
  const noBody = recorder();
  timers.begin(noBody, timeouts(10, 30), false);
  assert.equal(await until(() => noBody.fired.length > 0), true);
  await sleep(60);
  assert.deepEqual(noBody.fired, [IDLE_TIMEOUT]);
  timers.close();
});

test('the request timeout stops once the request is done; 0 disables either timeout', async () => {
  const timers = new StreamTimers();
  const r = recorder();
  timers.begin(r, timeouts(20, 0), true);
  timers.requestDone();
  await sleep(100);
  assert.deepEqual(r.fired, []);
  timers.close();
});

test("a route's idle_timeout replaces the stream's, and 0 turns it off", async () => {
  const timers = new StreamTimers();
  const off = recorder();
  timers.begin(off, timeouts(0, 20), false);
  timers.replaceIdle(0, off);
  await sleep(100);
  assert.deepEqual(off.fired, []);
  timers.end();
  const replaced = recorder();
  timers.begin(replaced, timeouts(0, 60_000), false);
  timers.replaceIdle(10, replaced);
  assert.equal(await until(() => replaced.fired.length > 0), true);
  assert.deepEqual(replaced.fired, [IDLE_TIMEOUT]);
  timers.close();
});

test("the route timeout arms once for the attempt; the stream's end stops every timer", async () => {
  const timers = new StreamTimers();
  const first = recorder();
  const second = recorder();
  timers.armRoute(10, first);
  timers.armRoute(10, second);
  assert.equal(await until(() => first.fired.length > 0), true);
  await sleep(50);
  assert.equal(second.fired.length, 0, 'a running route timeout is not taken over');
  const stream = recorder();
  const attempt = recorder();
  timers.begin(stream, timeouts(10, 10), true);
  timers.armRoute(10, attempt);
  timers.end();
  await sleep(100);
  assert.deepEqual([stream.fired, attempt.fired], [[], []]);
  timers.close();
});

test('max_stream_duration arms for every stream and ends with it', async () => {
  const timers = new StreamTimers();
  const slow = recorder();
  timers.begin(slow, timeouts(0, 0, 15), false);
  assert.equal(await until(() => slow.fired.length === 1), true);
  assert.deepEqual(slow.fired, [DURATION_TIMEOUT]);
  const quick = recorder();
  timers.begin(quick, timeouts(0, 0, 15), false);
  timers.end();
  await sleep(60);
  assert.deepEqual(quick.fired, []);
  timers.close();
});
