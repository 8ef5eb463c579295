import assert from 'node:assert/strict';
import { test } from 'node:test';
import { VirtualAction, VirtualTimeScheduler } from 'rxjs';
import {
  activeHealthChanged,
  bootstrapLoaded,
  type JsonObject,
  runtimeModified,
  serverStateChanged,
} from '../../events/index.js';
import { Store } from '../../src/control/store.js';

const bootstrap: JsonObject = {
  static_resources: {
    clusters: [
      {
        name: 'svc',
        common_lb_config: { update_merge_window: '2s' },
        load_assignment: {
          endpoints: [
            {
              lb_endpoints: [
                { endpoint: { address: { socket_address: { address: '10.0.0.1', port_value: 80 } } } },
              ],
            },
          ],
        },
      },
    ],
  },
};

function newStore() {
  const scheduler = new VirtualTimeScheduler(VirtualAction, Infinity);
  const store = new Store({ scheduler });
  store.dispatch(bootstrapLoaded({ bootstrap, options: {}, version: 'v', sources: [] }), 'test');
  return { store, scheduler };
}

test('dispatch stamps sequence numbers and store time, and folds at once', () => {
  const { store, scheduler } = newStore();
  scheduler.schedule(() => store.dispatch(serverStateChanged({ state: 'LIVE' }), 'server'), 250);
  scheduler.flush();
  assert.equal(store.state.server.state, 'LIVE');
  assert.equal(store.state.seq, 2);
  assert.equal(store.state.at, 250);
});

test('a dispatch from inside a subscriber waits its turn instead of re-entering the reducer', () => {
  const { store } = newStore();
  const seen: number[] = [];
  store.applied$.subscribe(({ state }) => {
    seen.push(state.seq);
    if (state.seq === 2) store.dispatch(runtimeModified({ values: { b: '2' } }), 'test');
  });
  store.dispatch(runtimeModified({ values: { a: '1' } }), 'test');
  assert.deepEqual(seen, [2, 3]);
  assert.equal(store.state.runtime.layers.at(-1)?.values.b, '2');
});

test('the cluster merge window comes from the cluster config', () => {
  const { store, scheduler } = newStore();
  const flap = (healthy: boolean) => activeHealthChanged({ cluster: 'svc', address: '10.0.0.1:80', healthy });
  scheduler.schedule(() => store.dispatch(flap(false), 'hc'), 0);
  scheduler.schedule(() => store.dispatch(flap(true), 'hc'), 100);
  scheduler.schedule(() => {
    // Held: the second verdict is not visible before the 2 s window closes.
    assert.equal(store.state.clusters.svc?.hosts[0]?.failedActiveHc, true);
  }, 1999);
  scheduler.flush();
  assert.equal(store.state.clusters.svc?.hosts[0]?.failedActiveHc, false);
  assert.equal(store.mergeStats.merged, 1);
});

test('snapshots are frozen and unchanged slices keep their identity', () => {
  const { store } = newStore();
  const before = store.state;
  store.dispatch(runtimeModified({ values: { k: 'v' } }), 'test');
  const after = store.state;
  assert.ok(Object.isFrozen(after));
  assert.ok(Object.isFrozen(after.clusters.svc));
  assert.throws(() => {
    (after.server as { state: string }).state = 'DRAINING';
  });
  assert.equal(after.clusters, before.clusters);
  assert.notEqual(after.runtime, before.runtime);
});

test('fold keeps the sequence numbers of a batch folded elsewhere and dispatch continues after them', () => {
  const store = new Store({ scheduler: new VirtualTimeScheduler(VirtualAction, Infinity) });
  store.fold([{ seq: 41, at: 5, source: 'primary', event: runtimeModified({ values: { a: '1' } }) }]);
  const env = store.dispatch(runtimeModified({ values: { a: '2' } }), 'test');
  assert.equal(env.seq, 42);
  assert.equal(store.state.seq, 42);
});
