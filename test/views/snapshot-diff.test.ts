import assert from 'node:assert/strict';
import { test } from 'node:test';
import { activeHealthChanged, hostsSet, runtimeModified } from '../../events/index.js';
import {
  applySemanticPatch,
  parsePointer,
  semanticDiff,
  semanticView,
  valueAt,
} from '../../views/snapshot-diff.js';
import { bootstrapWith, cluster, virtualStore } from '../helpers/event-log.js';

const boot = bootstrapWith([
  cluster('svc', ['10.0.0.1:80', '10.0.0.2:80', '10.0.0.3:80']),
  cluster('other', []),
]);

test('a host leaving is one remove keyed by address, not a shift of every later index', () => {
  const { store } = virtualStore(boot);
  const before = store.state;
  const hosts = before.clusters.svc!.hosts.filter((h) => h.address !== '10.0.0.1:80');
  store.dispatch(hostsSet({ cluster: 'svc', hosts, versionInfo: '' }), 'eds');
  const ops = semanticDiff(before, store.state);
  assert.deepEqual(ops, [{ op: 'remove', path: '/clusters/svc/hosts/10.0.0.1:80' }]);
});

test('a health change names the cluster, the host and the field', () => {
  const { store } = virtualStore(boot);
  const before = store.state;
  store.dispatch(activeHealthChanged({ cluster: 'svc', address: '10.0.0.2:80', healthy: false }), 'hc');
  assert.deepEqual(semanticDiff(before, store.state), [
    { op: 'replace', path: '/clusters/svc/hosts/10.0.0.2:80/failedActiveHc', value: true },
    { op: 'add', path: '/clusters/svc/hosts/10.0.0.2:80/activeHcChangedAt', value: 0 },
  ]);
});

test('runtime layers are keyed by name and the patch applies to the earlier document', () => {
  const { store } = virtualStore(boot);
  const before = store.state;
  store.dispatch(runtimeModified({ values: { 'upstream.healthy_panic_threshold': '20' } }), 'admin');
  const ops = semanticDiff(before, store.state);
  assert.deepEqual(ops, [
    { op: 'add', path: '/runtime/layers/admin/values/upstream.healthy_panic_threshold', value: '20' },
  ]);
  const applied = applySemanticPatch(semanticView(before), ops);
  assert.deepEqual(applied, JSON.parse(JSON.stringify(semanticView(store.state))));
  assert.ok(
    Object.isFrozen(before.runtime.layers[1]!.values),
    'the earlier snapshot stays frozen and untouched',
  );
  assert.deepEqual(before.runtime.layers[1]!.values, {});
});

test('valueAt follows semantic paths, with escaped pointer tokens', () => {
  const { store } = virtualStore(boot);
  assert.deepEqual(parsePointer('/a~1b/c~0d'), ['a/b', 'c~d']);
  assert.equal(parsePointer('no-slash'), null);
  assert.equal(valueAt(store.state, ['clusters', 'svc', 'hosts', '10.0.0.3:80', 'weight']), 1);
  assert.equal(valueAt(store.state, ['clusters', 'svc', 'hosts', '10.9.9.9:80']), undefined);
  const hosts = valueAt(store.state, ['clusters', 'svc', 'hosts']) as Record<string, unknown>;
  assert.deepEqual(Object.keys(hosts), ['10.0.0.1:80', '10.0.0.2:80', '10.0.0.3:80']);
  assert.equal(valueAt(store.state, ['seq']), undefined, 'seq is not part of the semantic document');
});
