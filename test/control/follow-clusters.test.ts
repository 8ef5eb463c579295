import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  clusterAdded,
  clusterRemoved,
  clusterUpdated,
  hostsSet,
  type JsonObject,
} from '../../events/index.js';
import { followClusters } from '../../src/control/follow-clusters.js';
import { Store } from '../../src/control/store.js';
import { hostSpec, loadClusters } from '../helpers/upstream.js';

const cluster = (name: string, extra: JsonObject = {}): JsonObject => ({
  name,
  type: 'STATIC',
  common_lb_config: { update_merge_window: '0s' },
  ...extra,
});

function recorder(store: Store) {
  const calls: string[] = [];
  const counts: number[] = [];
  let kept = 0;
  const followed = followClusters<number>(store, {
    added(name) {
      calls.push(`added ${name}`);
      return ++kept;
    },
    changed(name, _entry, value) {
      calls.push(`changed ${name} ${value}`);
      return value;
    },
    removed(name, value) {
      calls.push(`removed ${name} ${value}`);
    },
    settled: (count) => counts.push(count),
  });
  return { calls, followed, counts };
}

test('each cluster is added once, changed when its entry is a new object, removed when it leaves; an unchanged one is not called', () => {
  const store = new Store();
  loadClusters(store, [cluster('a'), cluster('b')]);
  const { calls, followed, counts } = recorder(store);
  assert.deepEqual(calls, ['added a', 'added b']);
  store.dispatch(hostsSet({ cluster: 'a', hosts: [hostSpec('127.0.0.1:1')], versionInfo: '1' }), 'test');
  assert.deepEqual(calls.slice(2), ['changed a 1']);
  store.dispatch(
    clusterAdded({ cluster: cluster('c') as never, addedViaApi: true, versionInfo: '2' }),
    'test',
  );
  store.dispatch(clusterRemoved({ name: 'b', versionInfo: '3' }), 'test');
  assert.deepEqual(calls.slice(3), ['added c', 'removed b 2']);
  assert.equal(followed.get('c'), 3);
  assert.equal(followed.get('b'), undefined);
  assert.deepEqual([...followed.values()], [1, 3]);
  assert.equal(followed.size, 2);
  assert.deepEqual(counts.slice(-1), [2]);
  followed.close();
  store.dispatch(
    clusterUpdated({ cluster: cluster('a', { connect_timeout: '2s' }) as never, versionInfo: '4' }),
    'test',
  );
  assert.equal(calls.length, 5, 'no call once closed');
});

test('restart makes every cluster changed, even one whose entry kept its identity', () => {
  const store = new Store();
  loadClusters(store, [cluster('a'), cluster('b')]);
  const calls: string[] = [];
  let restart = false;
  followClusters<undefined>(store, {
    added: (name) => void calls.push(`added ${name}`),
    changed: (name) => void calls.push(`changed ${name}`),
    removed: (name) => void calls.push(`removed ${name}`),
    restart: () => restart,
  });
  restart = true;
  store.dispatch(hostsSet({ cluster: 'a', hosts: [hostSpec('127.0.0.1:1')], versionInfo: '1' }), 'test');
  assert.deepEqual(calls, ['added a', 'added b', 'changed a', 'changed b']);
});

test('with failed, a snapshot that throws is reported and the next one is followed again', () => {
  const store = new Store();
  loadClusters(store, [cluster('a')]);
  const errors: unknown[] = [];
  let throws = true;
  const seen: string[] = [];
  followClusters<undefined>(store, {
    added(name) {
      if (throws) throw new Error(`bad ${name}`);
      seen.push(name);
    },
    changed: () => undefined,
    removed: () => undefined,
    failed: (err) => errors.push(err),
  });
  assert.equal((errors[0] as Error).message, 'bad a');
  throws = false;
  store.dispatch(hostsSet({ cluster: 'a', hosts: [hostSpec('127.0.0.1:1')], versionInfo: '1' }), 'test');
  assert.deepEqual(seen, ['a'], 'the cluster that failed is added on the next snapshot');
});
