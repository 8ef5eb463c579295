import assert from 'node:assert/strict';
import { test } from 'node:test';
import { from, Subject, VirtualAction, VirtualTimeScheduler } from 'rxjs';
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
