import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  activeHealthChanged,
  bootstrapLoaded,
  clusterAdded,
  clusterRemoved,
  clusterUpdated,
  type Envelope,
  hostsSet,
  type JsonObject,
  listenerBound,
  logLevelsChanged,
  type ProxyEvent,
  runtimeModified,
} from '../../events/index.js';
import {
  applyInPlace,
  entryOf,
  foldAll,
  initialState,
  mergeWindowMs,
  rootReducer,
  type State,
} from '../../reducers/index.js';
import { runtimeValue } from '../../reducers/runtime.js';
import { renderListeners } from '../../views/listeners/render.js';

// Regression: records keyed by user-given names were written by assignment and read by
// index, so a cluster named `__proto__` set the record's prototype instead of being added
// (and an immer draft threw), and a name like `constructor` read Object.prototype.

/** Names that collide with Object.prototype, plus one that does not. */
const NAMES = ['__proto__', 'constructor', 'toString', 'hasOwnProperty', 'plain'];

// Built from JSON, as the loader and the event log build them: `__proto__` is an own key.
const bootstrap = JSON.parse(
  JSON.stringify({
    static_resources: {
      clusters: NAMES.map((name) => ({
        name,
        type: 'STATIC',
        common_lb_config: { update_merge_window: '3s' },
      })),
      listeners: NAMES.map((name) => ({ name, address: { socket_address: { address: '127.0.0.1' } } })),
    },
  }),
) as JsonObject;

const host = (ip: string) => ({
  address: `${ip}:80`,
  ip,
  port: 80,
  hostname: '',
  weight: 1,
  priority: 0,
  locality: { region: '', zone: '', sub_zone: '' },
  metadata: {},
  edsHealth: 'HEALTHY' as const,
});

const ownKeys = (names: string[]): Record<string, string> =>
  Object.fromEntries(names.map((name, i) => [name, String(i + 1)]));

const events: ProxyEvent[] = [
  bootstrapLoaded({ bootstrap, options: {}, version: 'v', sources: [] }),
  hostsSet({ cluster: '__proto__', hosts: [host('10.0.0.1')], versionInfo: '' }),
  hostsSet({ cluster: 'constructor', hosts: [host('10.0.0.2')], versionInfo: '' }),
  activeHealthChanged({ cluster: '__proto__', address: '10.0.0.1:80', healthy: false }),
  // Neither names a cluster the state holds: nothing may be created or changed.
  clusterUpdated({ cluster: { name: 'valueOf' }, versionInfo: 'v2' }),
  activeHealthChanged({ cluster: 'isPrototypeOf', address: '10.0.0.1:80', healthy: false }),
  clusterUpdated({ cluster: { name: '__proto__', type: 'STATIC', lb_policy: 'RANDOM' }, versionInfo: 'v3' }),
  clusterRemoved({ name: 'toString', versionInfo: 'v4' }),
  clusterAdded({ cluster: { name: 'toString', type: 'EDS' }, addedViaApi: true, versionInfo: 'v5' }),
  listenerBound({ name: '__proto__', address: '127.0.0.1', port: 40001 }),
  listenerBound({ name: 'valueOf', address: '127.0.0.1', port: 40002 }),
  runtimeModified({ values: ownKeys(['__proto__', 'constructor', 'x']) }),
  runtimeModified({ values: { x: '' } }),
  logLevelsChanged({ levels: JSON.parse('{"__proto__":"debug","toString":"error"}') }),
];

const envelopes: Envelope<ProxyEvent>[] = events.map((event, i) => ({
  seq: i + 1,
  at: i,
  source: 'test',
  event,
}));

function oneByOne(): State {
  return envelopes.reduce(rootReducer, initialState);
}

test('a cluster or listener named like an Object.prototype member is an entry like any other', () => {
  const state = oneByOne();
  assert.deepEqual(Object.keys(state.clusters), [
    '__proto__',
    'constructor',
    'hasOwnProperty',
    'plain',
    'toString',
  ]);
  assert.deepEqual(Object.keys(state.listeners), NAMES);
  assert.equal(Object.getPrototypeOf(state.clusters), Object.prototype, 'the record keeps its prototype');
  assert.equal(entryOf(state.clusters, '__proto__')?.config.lb_policy, 'RANDOM');
  assert.equal(entryOf(state.clusters, '__proto__')?.versionInfo, 'v3');
  assert.deepEqual(
    entryOf(state.clusters, '__proto__')?.hosts.map((h) => [h.address, h.failedActiveHc]),
    [['10.0.0.1:80', true]],
  );
  assert.deepEqual(
    entryOf(state.clusters, 'constructor')?.hosts.map((h) => h.address),
    ['10.0.0.2:80'],
  );
  assert.equal(entryOf(state.clusters, 'toString')?.addedViaApi, true, 'removed, then added again');
  assert.equal(entryOf(state.clusters, 'valueOf'), undefined);
  assert.equal(entryOf(state.listeners, '__proto__')?.boundAddress, '127.0.0.1:40001');
  assert.equal(entryOf(state.listeners, 'valueOf'), undefined);
});

test('events for names the state does not hold change nothing, not even Object.prototype', () => {
  const before = foldAll(initialState, envelopes.slice(0, 4));
  const after = foldAll(before, envelopes.slice(4, 6));
  assert.equal(after.clusters, before.clusters, 'the record is the very same object');
  oneByOne();
  for (const field of ['boundAddress', 'state', 'hosts', 'config', 'failedActiveHc']) {
    assert.equal(Object.hasOwn(Object.prototype, field), false, `Object.prototype.${field} was set`);
  }
});

test('runtime keys and logger names like __proto__ are kept, and read no inherited value', () => {
  const state = oneByOne();
  const admin = state.runtime.layers.at(-1)?.values ?? {};
  assert.deepEqual(Object.entries(admin), [
    ['__proto__', '1'],
    ['constructor', '2'],
  ]);
  assert.equal(runtimeValue(state, '__proto__'), '1');
  assert.equal(runtimeValue(state, 'toString'), undefined);
  assert.deepEqual(Object.entries(state.logging.levels), [
    ['__proto__', 'debug'],
    ['toString', 'error'],
  ]);
  assert.equal(mergeWindowMs(state, 'plain'), 3000);
  assert.equal(mergeWindowMs(state, 'valueOf'), 0, 'not a cluster: no window');
});

test('the immer fold, one batch and the in-place replay fold agree, and survive JSON', () => {
  const state = oneByOne();
  assert.deepEqual(foldAll(initialState, envelopes), state);
  const working = structuredClone(initialState) as State;
  for (const env of envelopes) applyInPlace(working, env);
  assert.deepEqual(working, state);
  const json = JSON.stringify(state);
  assert.match(json, /"clusters":\{"__proto__":\{"name":"__proto__"/);
  assert.deepEqual(JSON.parse(json), state);
  // A state restored from JSON (a checkpoint, a worker) folds names as safely as a fresh one.
  const restored = JSON.parse(json) as State;
  const again = foldAll(restored, [
    { seq: 100, at: 100, source: 'test', event: clusterRemoved({ name: '__proto__', versionInfo: 'v6' }) },
    {
      seq: 101,
      at: 101,
      source: 'test',
      event: clusterAdded({ cluster: { name: '__proto__' }, addedViaApi: true, versionInfo: 'v7' }),
    },
  ]);
  assert.equal(entryOf(again.clusters, '__proto__')?.versionInfo, 'v7');
  assert.deepEqual(Object.keys(again.clusters).sort(), Object.keys(state.clusters).sort());
});

test('views list such names unchanged', () => {
  const body = String(renderListeners(oneByOne(), 'text').body);
  assert.deepEqual(body.split('\n').filter(Boolean), [
    '__proto__::127.0.0.1:40001',
    'constructor::127.0.0.1:0',
    'hasOwnProperty::127.0.0.1:0',
    'plain::127.0.0.1:0',
    'toString::127.0.0.1:0',
  ]);
});
