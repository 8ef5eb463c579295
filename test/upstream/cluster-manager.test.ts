import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  activeHealthChanged,
  bootstrapLoaded,
  clusterAdded,
  clusterRemoved,
  hostsSet,
  type JsonObject,
  runtimeModified,
} from '../../events/index.js';
import { createClusterManager } from '../../src/upstream/cluster-manager.js';
import { seededRandom } from '../../src/upstream/random.js';
import type { UpstreamHost } from '../../src/upstream/types.js';
import { hostSpec, upstreamContext } from '../helpers/upstream.js';

function staticCluster(name: string, ports: number[], extra: JsonObject = {}): JsonObject {
  return {
    name,
    // Health updates are otherwise held by the 1 s merge window.
    common_lb_config: { update_merge_window: '0s' },
    ...extra,
    load_assignment: {
      cluster_name: name,
      endpoints: [
        {
          lb_endpoints: ports.map((port) => ({
            endpoint: { address: { socket_address: { address: '127.0.0.1', port_value: port } } },
          })),
        },
      ],
    },
  };
}

async function started(clusters: JsonObject[], onHostsRemoved?: (hosts: UpstreamHost[]) => void) {
  const ctx = upstreamContext();
  ctx.store.dispatch(
    bootstrapLoaded({
      bootstrap: { static_resources: { clusters } },
      options: {},
      version: 'test',
      sources: [],
    }),
    'test',
  );
  const manager = await createClusterManager(ctx, {
    random: seededRandom(1),
    onHostsRemoved,
  });
  return {
    ctx,
    manager,
    stat: (name: string) => ctx.stats.gauges.get(name)?.value ?? ctx.stats.counters.get(name)?.value,
  };
}

test('static clusters become runtimes with a working balancer and membership stats', async () => {
  const { manager, stat } = await started([staticCluster('a', [1001, 1002]), staticCluster('b:x', [2001])]);
  const a = manager.get('a')!;
  assert.deepEqual(
    a.hosts.map((h) => h.address),
    ['127.0.0.1:1001', '127.0.0.1:1002'],
  );
  assert.ok(a.lb.choose({ hash: null, attempt: 0 }));
  assert.equal(manager.all().length, 2);
  assert.equal(stat('cluster_manager.active_clusters'), 2);
  assert.equal(stat('cluster_manager.cluster_added'), 2);
  assert.equal(stat('cluster.a.membership_total'), 2);
  assert.equal(stat('cluster.a.membership_healthy'), 2);
  assert.equal(stat('cluster.a.membership_change'), 1);
  assert.equal(stat('cluster.b_x.max_host_weight'), 1, 'stat names turn : into _');
  manager.close();
});

test('only clusters whose snapshot entry changed are rebuilt; members keep their stats', async () => {
  const { ctx, manager, stat } = await started([
    staticCluster('a', [1001, 1002]),
    staticCluster('b', [2001]),
  ]);
  const a = manager.get('a')!;
  const b = manager.get('b')!;
  const kept = a.hosts[1]!;
  kept.stats.rq_total = 7;
  ctx.store.dispatch(
    hostsSet({
      cluster: 'a',
      hosts: [hostSpec('127.0.0.1:1002', { weight: 5 }), hostSpec('127.0.0.1:1003')],
      versionInfo: '1',
    }),
    'test',
  );
  const a2 = manager.get('a')!;
  assert.notEqual(a2, a, 'a new runtime for the changed cluster');
  assert.equal(manager.get('b'), b, 'the unchanged cluster keeps its runtime object');
  assert.equal(a2.hosts[0], kept, 'a member that stays keeps its object');
  assert.equal(a2.hosts[0]!.state.weight, 5, 'with the new snapshot record');
  assert.equal(manager.hostStats('a', '127.0.0.1:1002')?.rq_total, 7);
  assert.equal(manager.hostStats('a', '127.0.0.1:1001'), undefined, 'a member that left is dropped');
  assert.equal(stat('cluster.a.membership_change'), 2);
  assert.equal(stat('cluster.a.max_host_weight'), 5);

  ctx.store.dispatch(
    activeHealthChanged({ cluster: 'a', address: '127.0.0.1:1003', healthy: false }),
    'test',
  );
  assert.equal(stat('cluster.a.membership_healthy'), 1);
  assert.equal(stat('cluster.a.membership_change'), 2, 'health is not membership');

  ctx.store.dispatch(
    clusterAdded({ cluster: staticCluster('c', [3001]) as never, addedViaApi: true, versionInfo: '2' }),
    'test',
  );
  ctx.store.dispatch(clusterRemoved({ name: 'b', versionInfo: '3' }), 'test');
  assert.equal(manager.get('b'), undefined);
  assert.ok(manager.get('c'));
  assert.equal(stat('cluster_manager.cluster_removed'), 1);
  assert.equal(stat('cluster_manager.active_clusters'), 2);
  manager.close();
});

test('members that leave, clusters that go and a closing manager hand their hosts back for draining', async () => {
  const released: string[][] = [];
  const { ctx, manager } = await started(
    [staticCluster('a', [1001, 1002]), staticCluster('b', [2001])],
    (hosts) => released.push(hosts.map((h) => h.address)),
  );
  ctx.store.dispatch(
    hostsSet({ cluster: 'a', hosts: [hostSpec('127.0.0.1:1002')], versionInfo: '1' }),
    'test',
  );
  ctx.store.dispatch(
    activeHealthChanged({ cluster: 'a', address: '127.0.0.1:1002', healthy: false }),
    'test',
  );
  ctx.store.dispatch(clusterRemoved({ name: 'b', versionInfo: '2' }), 'test');
  manager.close();
  assert.deepEqual(released, [['127.0.0.1:1001'], ['127.0.0.1:2001'], ['127.0.0.1:1002']]);
});

test('the runtime panic threshold rebuilds every balancer', async () => {
  const { ctx, manager } = await started([staticCluster('a', [1001, 1002, 1003, 1004])]);
  for (const port of [1002, 1003, 1004])
    ctx.store.dispatch(
      activeHealthChanged({ cluster: 'a', address: `127.0.0.1:${port}`, healthy: false }),
      'test',
    );
  const pick = () =>
    new Set(Array.from({ length: 40 }, () => manager.get('a')!.lb.choose({ hash: null, attempt: 0 })?.port));
  assert.equal(pick().size, 4, 'one healthy host in four: panic, every host serves');
  const before = manager.get('a');
  ctx.store.dispatch(runtimeModified({ values: { 'upstream.healthy_panic_threshold': '0' } }), 'test');
  assert.notEqual(manager.get('a'), before);
  assert.deepEqual([...pick()], [1001], 'panic disabled: only the healthy host');
  manager.close();
});

test('a balancer that cannot be built chooses nothing instead of crashing', async () => {
  const { manager } = await started([
    staticCluster('r', [1001], {
      lb_policy: 'RING_HASH',
      ring_hash_lb_config: { minimum_ring_size: '100', maximum_ring_size: '10' },
    }),
  ]);
  assert.equal(manager.get('r')!.lb.choose({ hash: 1n, attempt: 0 }), null);
  manager.close();
});

test("a cluster's traffic record is made with its first runtime and carried to each rebuilt one", async () => {
  const ctx = upstreamContext();
  ctx.store.dispatch(
    bootstrapLoaded({
      bootstrap: { static_resources: { clusters: [staticCluster('a', [1001])] } },
      options: {},
      version: 'test',
      sources: [],
    }),
    'test',
  );
  const made: string[] = [];
  const manager = await createClusterManager(ctx, {
    traffic: (cluster, previous: { name: string; builds: number } | undefined) => {
      if (previous) {
        previous.builds += 1;
        return previous;
      }
      made.push(cluster.name);
      return { name: cluster.name, builds: 1 };
    },
  });
  const first = manager.get('a')!;
  ctx.store.dispatch(
    hostsSet({ cluster: 'a', hosts: [hostSpec('127.0.0.1:1002')], versionInfo: '2' }),
    'test',
  );
  const rebuilt = manager.get('a')!;
  assert.notEqual(rebuilt, first, 'a new membership rebuilds the runtime');
  assert.equal(rebuilt.traffic, first.traffic);
  assert.deepEqual(rebuilt.traffic, { name: 'a', builds: 2 });
  ctx.store.dispatch(
    clusterAdded({ cluster: staticCluster('b', [2001]) as never, addedViaApi: true, versionInfo: '2' }),
    'test',
  );
  assert.deepEqual(made, ['a', 'b']);
  manager.close();
});
