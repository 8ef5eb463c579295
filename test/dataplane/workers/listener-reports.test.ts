/**
 * The fold of every thread's listener reports: a bind is one event once every live thread
 * answered, a failure in any thread wins over the others' binds (so no listener is left served
 * by some threads only), a thread that ends owes no answer, and a late answer is dropped.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { listenerBindFailed, listenerBound, type ProxyEvent } from '../../../events/index.js';
import type { ListenerEntry, State } from '../../../reducers/index.js';
import { ListenerReports } from '../../../src/dataplane/workers/listener-reports.js';

function fold(live: number[]) {
  const listeners: Record<string, Pick<ListenerEntry, 'state'>> = { web: { state: 'pending' } };
  const dispatched: ProxyEvent[] = [];
  const reports = new ListenerReports(
    () => ({ listeners }) as unknown as State,
    () => live,
    (event) => {
      dispatched.push(event);
      if (event.type === 'listener/bound') listeners.web = { state: 'active' };
      if (event.type === 'listener/bind-failed') listeners.web = { state: 'failed' };
    },
  );
  return { reports, dispatched, live };
}

const bound = listenerBound({ name: 'web', address: '127.0.0.1', port: 8080 });
const failed = listenerBindFailed({
  name: 'web',
  error: "listener 'web': cannot bind 127.0.0.1:8080: EADDRINUSE",
});

test('bound in every live thread: one listener/bound, after the last answer only', () => {
  const { reports, dispatched } = fold([0, 1, 2]);
  reports.bind(bound, 0);
  reports.bind(bound, 2);
  assert.deepEqual(dispatched, []);
  assert.equal(reports.boundPort('web'), 8080, 'the port the other threads bind meanwhile');
  reports.bind(bound, 1);
  assert.deepEqual(dispatched, [bound]);
});

test('one thread failed while the others bound: listener/bind-failed, whichever answered first', () => {
  for (const order of [
    [bound, failed],
    [failed, bound],
  ]) {
    const { reports, dispatched } = fold([0, 1]);
    for (const [thread, event] of order.entries()) reports.bind(event, thread);
    assert.deepEqual(dispatched, [failed]);
  }
});

test('a thread that ended owes no answer: the fold settles without it', () => {
  const { reports, dispatched, live } = fold([0, 1]);
  reports.bind(bound, 0);
  live.pop();
  reports.settle();
  assert.deepEqual(dispatched, [bound]);
});

test('an answer for a listener no longer pending (a restarted worker joining) is dropped', () => {
  const { reports, dispatched } = fold([0]);
  reports.bind(bound, 0);
  reports.bind(failed, 0);
  assert.deepEqual(dispatched, [bound]);
});
