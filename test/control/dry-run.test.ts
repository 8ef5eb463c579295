import assert from 'node:assert/strict';
import { test } from 'node:test';
import jsonpatch from 'fast-json-patch';
import { activeHealthChanged, clusterRemoved, runtimeModified } from '../../events/index.js';
import { dryRun } from '../../src/control/dry-run.js';
import { semanticView } from '../../views/snapshot-diff.js';
import { bootstrapWith, cluster, virtualStore } from '../helpers/event-log.js';

const boot = bootstrapWith([cluster('svc', ['10.0.0.1:80', '10.0.0.2:80']), cluster('old', ['10.1.0.1:80'])]);

test('a dry run answers the keyed patch and leaves the store as it was', () => {
  const { store } = virtualStore(boot);
  const before = store.state;
  const ops = dryRun(
    store.state,
    [
      activeHealthChanged({ cluster: 'svc', address: '10.0.0.2:80', healthy: false }),
      runtimeModified({ values: { a: '1' } }),
      clusterRemoved({ name: 'old', versionInfo: '' }),
    ],
    1234,
  );
  assert.deepEqual(ops.map((op) => `${op.op} ${op.path}`).sort(), [
    'add /clusters/svc/hosts/10.0.0.2:80/activeHcChangedAt',
    'add /runtime/layers/admin/values/a',
    'remove /clusters/old',
    'replace /clusters/svc/hosts/10.0.0.2:80/failedActiveHc',
  ]);
  assert.equal(store.state, before, 'nothing was dispatched');
  assert.equal(store.state.clusters.old?.name, 'old');
  // The patch, applied to the semantic document, gives the folded result.
  const applied = jsonpatch.applyPatch(
    jsonpatch.deepClone(semanticView(before)),
    ops,
    true,
    false,
  ).newDocument;
  assert.equal((applied as { clusters: Record<string, unknown> }).clusters.old, undefined);
});

test('a dry run of events that change nothing is an empty patch', () => {
  const { store } = virtualStore(boot);
  assert.deepEqual(dryRun(store.state, [runtimeModified({ values: { absent: '' } })], 5), []);
});
