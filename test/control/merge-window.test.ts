import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  from,
  type SchedulerAction,
  type SchedulerLike,
  Subject,
  Subscription,
  VirtualAction,
  VirtualTimeScheduler,
} from 'rxjs';
import {
  activeHealthChanged,
  type Envelope,
  hostsSet,
  hostsUpdated,
  type ProxyEvent,
  runtimeModified,
} from '../../events/index.js';
import { mergeWindow } from '../../src/control/merge-window.js';

/** Feeds events at virtual times and records which batches come out when. */
function run(windowMs: number, inputs: Array<[number, ProxyEvent]>) {
  const scheduler = new VirtualTimeScheduler(VirtualAction, Infinity);
  const input = new Subject<Envelope<ProxyEvent>>();
  const out: Array<{ at: number; seqs: number[] }> = [];
  const stats = { merged: 0, cancelled: 0, outOfWindow: 0 };
  input.pipe(mergeWindow(() => windowMs, scheduler, stats)).subscribe((batch) => {
    out.push({ at: scheduler.now(), seqs: batch.map((e) => e.seq) });
  });
  inputs.forEach(([at, event], i) => {
    scheduler.schedule(() => input.next({ seq: i + 1, at, source: 'test', event }), at);
  });
  scheduler.flush();
  return { out, stats };
}

const flap = (healthy: boolean) => activeHealthChanged({ cluster: 'a', address: '10.0.0.1:80', healthy });

test('the first update passes at once and later ones wait for the window to close', () => {
  const { out, stats } = run(1000, [
    [0, flap(false)],
    [100, flap(true)],
    [400, flap(false)],
  ]);
  assert.deepEqual(out, [
    { at: 0, seqs: [1] },
    { at: 1000, seqs: [2, 3] },
  ]);
  assert.equal(stats.merged, 1);
});

test('an update after the window has closed passes at once again', () => {
  const { out } = run(1000, [
    [0, flap(false)],
    [2500, flap(true)],
  ]);
  assert.deepEqual(out, [
    { at: 0, seqs: [1] },
    { at: 2500, seqs: [2] },
  ]);
});

test('a delivery at window expiry opens the next window', () => {
  const { out } = run(1000, [
    [0, flap(false)],
    [500, flap(true)],
    [1500, flap(false)],
  ]);
  assert.deepEqual(out, [
    { at: 0, seqs: [1] },
    { at: 1000, seqs: [2] },
    { at: 2000, seqs: [3] },
  ]);
});

test('membership changes are never delayed and take what is held with them', () => {
  const members = hostsSet({ cluster: 'a', hosts: [], versionInfo: '1' });
  const { out, stats } = run(1000, [
    [0, flap(false)],
    [100, flap(true)],
    [200, members],
  ]);
  assert.deepEqual(out, [
    { at: 0, seqs: [1] },
    { at: 200, seqs: [2, 3] },
  ]);
  assert.equal(stats.cancelled, 1);
});

test('a window of 0 disables merging', () => {
  const { out } = run(0, [
    [0, flap(false)],
    [1, hostsUpdated({ cluster: 'a', updates: [{ address: '10.0.0.1:80', weight: 3 }] })],
  ]);
  assert.deepEqual(out, [
    { at: 0, seqs: [1] },
    { at: 1, seqs: [2] },
  ]);
});

test('events outside endpoint health and weights pass straight through', () => {
  const { out } = run(1000, [
    [0, flap(false)],
    [10, flap(true)],
    [20, runtimeModified({ values: { k: 'v' } })],
  ]);
  assert.deepEqual(out, [
    { at: 0, seqs: [1] },
    { at: 20, seqs: [3] },
    { at: 1000, seqs: [2] },
  ]);
});

test('windows are per cluster', () => {
  const other = activeHealthChanged({ cluster: 'b', address: '10.0.0.2:80', healthy: false });
  const { out } = run(1000, [
    [0, flap(false)],
    [10, other],
    [20, flap(true)],
  ]);
  assert.deepEqual(out, [
    { at: 0, seqs: [1] },
    { at: 10, seqs: [2] },
    { at: 1000, seqs: [3] },
  ]);
});

test('completion delivers what is held, so a finite replay ends where the live run did', () => {
  const scheduler = new VirtualTimeScheduler(VirtualAction, Infinity);
  const batches: number[][] = [];
  const envs: Envelope<ProxyEvent>[] = [
    { seq: 1, at: 0, source: 't', event: flap(false) },
    { seq: 2, at: 0, source: 't', event: flap(true) },
  ];
  from(envs)
    .pipe(mergeWindow(() => 1000, scheduler))
    .subscribe((b) => batches.push(b.map((e) => e.seq)));
  assert.deepEqual(batches, [[1], [2]]);
});

/** A live thread's clock whose timers run only when the test says, late. */
class LateScheduler implements SchedulerLike {
  clock = 0;
  private readonly due: Array<() => void> = [];
  now(): number {
    return this.clock;
  }
  schedule<T>(work: (this: SchedulerAction<T>, state?: T) => void, _delay = 0, state?: T): Subscription {
    let cancelled = false;
    this.due.push(() => {
      if (!cancelled) work.call({} as SchedulerAction<T>, state);
    });
    return new Subscription(() => {
      cancelled = true;
    });
  }
  runTimers(at: number): void {
    this.clock = at;
    for (const run of this.due.splice(0)) run();
  }
}

test('a timer that runs late holds and passes what a replay on virtual time does, in the same order', () => {
  // Root cause: a busy thread ran the window's timer after the next update arrived; the update
  // passed at once and the held one came after it, while the replay (on time) held it.
  const inputs: Array<[number, ProxyEvent]> = [
    [0, flap(false)],
    [100, flap(true)],
    [1200, flap(false)],
  ];
  const scheduler = new LateScheduler();
  const input = new Subject<Envelope<ProxyEvent>>();
  const live: number[][] = [];
  input.pipe(mergeWindow(() => 1000, scheduler)).subscribe((b) => live.push(b.map((e) => e.seq)));
  inputs.forEach(([at, event], i) => {
    scheduler.clock = at;
    input.next({ seq: i + 1, at, source: 'test', event });
  });
  scheduler.runTimers(2300);
  const replayed = run(1000, inputs).out.map((b) => b.seqs);
  assert.deepEqual(replayed, [[1], [2], [3]]);
  assert.deepEqual(live, replayed);
});
