import assert from 'node:assert/strict';
import { test } from 'node:test';
import { activeHealthChanged, hostsUpdated, runtimeModified } from '../../events/index.js';
import type { State } from '../../reducers/index.js';
import { History, type HistoryOptions, weigh } from '../../src/control/history.js';
import { bootstrapWith, cluster, virtualStore } from '../helpers/event-log.js';

/**
 * A store whose history records from the first event, as `openEventLog` wires it, plus
 * the snapshot that was current right after each sequence number (what the admin showed).
 */
function recorded(mergeWindow: string, options: HistoryOptions = {}) {
  let history!: History;
  const live = new Map<number, State>();
  const { store, scheduler } = virtualStore(
    bootstrapWith([cluster('svc', ['10.0.0.1:80', '10.0.0.2:80'], mergeWindow)]),
    (s) => {
      history = new History(s.state, options);
      s.ingested$.subscribe((env) => history.recordIngested(env));
      s.applied$.subscribe(({ batch, state }) => {
        history.recordApplied(batch, state);
        live.set(Math.max(history.latestSeq(), ...batch.map((e) => e.seq)), state);
      });
      s.ingested$.subscribe((env) => live.set(env.seq, s.state));
    },
  );
  return { history, live, store, scheduler };
}

test('stateAt reproduces the live snapshot after every sequence number, merge window included', () => {
  const { history, live, store, scheduler } = recorded('1s', { checkpointEvery: 3 });
  const at = (ms: number, fn: () => void) => scheduler.schedule(fn, ms);
  at(10, () =>
    store.dispatch(activeHealthChanged({ cluster: 'svc', address: '10.0.0.1:80', healthy: false }), 'hc'),
  );
  at(20, () =>
    store.dispatch(activeHealthChanged({ cluster: 'svc', address: '10.0.0.2:80', healthy: false }), 'hc'),
  );
  at(30, () => store.dispatch(runtimeModified({ values: { k: 'v' } }), 'admin'));
  at(40, () =>
    store.dispatch(activeHealthChanged({ cluster: 'svc', address: '10.0.0.1:80', healthy: true }), 'hc'),
  );
  at(2500, () =>
    store.dispatch(hostsUpdated({ cluster: 'svc', updates: [{ address: '10.0.0.2:80', weight: 7 }] }), 'eds'),
  );
  for (let i = 0; i < 10; i++)
    at(3000 + i, () => store.dispatch(runtimeModified({ values: { i: String(i) } }), 'admin'));
  scheduler.flush();
  assert.equal(history.latestSeq(), 16);
  for (let seq = 1; seq <= 16; seq++) {
    assert.equal(
      JSON.stringify(history.stateAt(seq)),
      JSON.stringify(live.get(seq)),
      `state after seq ${seq}`,
    );
  }
  // Within the window the second failure waits: after seq 3 host 2 still looks healthy.
  assert.equal(history.stateAt(3)!.clusters.svc!.hosts[1]!.failedActiveHc, false);
  assert.equal(history.stateAt(5)!.clusters.svc!.hosts[1]!.failedActiveHc, true);
  assert.equal(history.stateAt(17), null, 'the future is not history');
});

test('a bounded history forgets old batches and says how far back it reaches', () => {
  const { history, store } = recorded('0s', { capacity: 20, checkpointEvery: 5 });
  for (let i = 0; i < 100; i++) store.dispatch(runtimeModified({ values: { n: String(i) } }), 'admin');
  assert.ok(history.oldestSeq() > 60, `oldest ${history.oldestSeq()}`);
  assert.equal(history.stateAt(history.oldestSeq() - 1), null);
  assert.equal(history.stateAt(80)!.runtime.layers.at(-1)!.values.n, '78');
  assert.equal(history.envelopesSince(0).length <= 25, true);
  assert.deepEqual(
    history.envelopesSince(97).map((e) => e.seq),
    [98, 99, 100, 101],
  );
  assert.deepEqual(
    history.envelopesSince(90, 2).map((e) => e.seq),
    [91, 92],
  );
});

test('blame names the envelope that last changed a value, not one that left it alone', () => {
  const { history, store } = recorded('0s');
  store.dispatch(activeHealthChanged({ cluster: 'svc', address: '10.0.0.2:80', healthy: false }), 'hc');
  const fixer = store.dispatch(
    activeHealthChanged({ cluster: 'svc', address: '10.0.0.2:80', healthy: true }),
    'hc',
  );
  store.dispatch(activeHealthChanged({ cluster: 'svc', address: '10.0.0.1:80', healthy: false }), 'hc');
  store.dispatch(runtimeModified({ values: { other: 'x' } }), 'admin');
  const result = history.blame(['clusters', 'svc', 'hosts', '10.0.0.2:80', 'failedActiveHc']);
  assert.equal(result.kind, 'changed');
  assert.equal(result.kind === 'changed' && result.envelope.seq, fixer.seq);
  assert.equal(result.kind === 'changed' && result.before, true);
  const weight = history.blame(['clusters', 'svc', 'hosts', '10.0.0.2:80', 'weight']);
  assert.equal(weight.kind === 'changed' && weight.envelope.event.type, 'server/bootstrap-loaded');
  assert.equal(history.blame(['drain', 'active']).kind, 'initial');
  assert.equal(history.blame(['clusters', 'nope']).kind, 'absent');
});

test('blame beyond what is retained is too old', () => {
  const { history, store } = recorded('0s', { capacity: 10, checkpointEvery: 4 });
  for (let i = 0; i < 50; i++) store.dispatch(runtimeModified({ values: { n: String(i) } }), 'admin');
  const result = history.blame(['clusters', 'svc', 'hosts', '10.0.0.1:80', 'weight']);
  assert.equal(result.kind, 'too-old');
  const n = history.blame(['runtime', 'layers', 'admin', 'values', 'n']);
  assert.equal(n.kind === 'changed' && n.envelope.seq, 51);
});

/**
 * Root cause: the history was bounded by a count of events only (10,000), whatever each one
 * held. A management server pushing 100,000 endpoints every few milliseconds makes each
 * `endpoints/hosts-set` about 11 MB on the heap: the real proxy grew by that much per push
 * (1.8 GB after 32 pushes, towards 100 GB at the count's limit). It now also keeps at most
 * `maxBytes` of events (64 MiB unless told), the oldest forgotten first.
 */
test('a history of heavy events keeps about maxBytes of them, and answers for what it keeps', () => {
  const { history, store } = recorded('0s', { maxBytes: 1024 * 1024 });
  const hosts = (n: number) =>
    Array.from({ length: 2000 }, (_, i) => ({ address: `10.0.${i >> 8}.${i & 255}:80`, weight: n + 1 }));
  for (let n = 0; n < 60; n++)
    store.dispatch(hostsUpdated({ cluster: 'svc', updates: hosts(n) }), 'eds');
  const kept = history.envelopesSince(0);
  const keptBytes = kept.reduce((sum, env) => sum + weigh(env), 0);
  assert.ok(weigh(kept.at(-1)) > 100_000, `one event weighs ${weigh(kept.at(-1))} bytes`);
  assert.ok(keptBytes <= 1.25 * 1024 * 1024, `${kept.length} envelopes of ${keptBytes} bytes kept`);
  assert.equal(kept.at(-1)!.seq, history.latestSeq(), 'the newest is kept');
  const oldest = history.oldestSeq();
  assert.ok(oldest > 30, `the batches reach back to seq ${oldest}`);
  assert.equal(history.stateAt(oldest - 1), null);
  assert.equal(history.stateAt(history.latestSeq() - 1)!.clusters.svc!.hosts.length, 2);
});

test('weigh counts strings by length and containers by their members', () => {
  assert.equal(weigh(7), 8);
  assert.equal(weigh('abcd'), 20);
  assert.ok(weigh({ a: 'x'.repeat(1000) }) > 1000);
  assert.ok(weigh(Array.from({ length: 100 }, () => 1)) > 1600);
});
