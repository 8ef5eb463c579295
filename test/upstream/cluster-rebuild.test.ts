import assert from 'node:assert/strict';
import { test } from 'node:test';
import { type HostSpec, hostsSet } from '../../events/index.js';
import { createClusterManager } from '../../src/upstream/cluster-manager.js';
import { seededRandom } from '../../src/upstream/random.js';
import type { UpstreamHost } from '../../src/upstream/types.js';
import { hostSpec, loadClusters, upstreamContext } from '../helpers/upstream.js';

/** An EDS cluster fed by hand, with the members each rebuild released. */
async function edsCluster(policy: string) {
  const ctx = upstreamContext();
  const cluster = {
    name: 'e',
    type: 'EDS',
    lb_policy: policy,
    eds_cluster_config: { eds_config: { ads: {} } },
  };
  loadClusters(ctx.store, [cluster]);
  const released: string[] = [];
  const manager = await createClusterManager(ctx, {
    random: seededRandom(1),
    onHostsRemoved: (hosts: UpstreamHost[]) => released.push(...hosts.map((h) => h.address)),
  });
  let version = 0;
  const set = (hosts: HostSpec[]) => {
    ctx.store.dispatch(hostsSet({ cluster: 'e', hosts, versionInfo: String(++version) }), 'test');
    return manager.get('e')!;
  };
  return { ctx, manager, set, released };
}

const specs = (ports: number[], weight = 1) => ports.map((p) => hostSpec(`10.0.0.1:${p}`, { weight }));

test('members listed again, in the same order or not, keep their host objects; the balancer sees new weights', async () => {
  const { manager, set, released, ctx } = await edsCluster('ROUND_ROBIN');
  const first = set(specs([1, 2, 3, 4]));
  first.hosts[2]!.stats.rq_total = 7;
  const same = set(specs([1, 2, 3, 4], 3));
  assert.notEqual(same, first, 'a new runtime');
  assert.deepEqual(
    same.hosts.map((h, i) => h === first.hosts[i]),
    [true, true, true, true],
  );
  assert.deepEqual(
    same.hosts.map((h) => h.state.weight),
    [3, 3, 3, 3],
  );
  assert.equal(manager.hostStats('e', '10.0.0.1:3')?.rq_total, 7);
  const moved = set(specs([4, 3, 2, 1, 5]));
  assert.deepEqual(
    moved.hosts.map((h) => h.address),
    ['10.0.0.1:4', '10.0.0.1:3', '10.0.0.1:2', '10.0.0.1:1', '10.0.0.1:5'],
  );
  assert.equal(moved.hosts[1], first.hosts[2], 'the member keeps its object where it moved');
  assert.equal(manager.hostStats('e', '10.0.0.1:3')?.rq_total, 7);
  assert.deepEqual(released, []);
  const shrunk = set(specs([4, 9, 2, 1, 5]));
  assert.deepEqual(released, ['10.0.0.1:3']);
  assert.equal(manager.hostStats('e', '10.0.0.1:3'), undefined);
  assert.equal(shrunk.hosts[0], moved.hosts[0]);
  const picked = new Set(
    Array.from({ length: 10 }, () => shrunk.lb.choose({ hash: null, attempt: 0 })?.address),
  );
  assert.equal(picked.size, 5, 'round robin reaches every member of the rebuilt list');
  manager.close();
  ctx.store.close();
});

test('a hashing balancer rebuilt over the same members picks as one built afresh', async () => {
  for (const policy of ['RING_HASH', 'MAGLEV']) {
    const kept = await edsCluster(policy);
    kept.set(specs([1, 2, 3, 4, 5, 6]));
    const rebuilt = kept.set(specs([2, 3, 4, 5, 6, 7]));
    const fresh = await edsCluster(policy);
    const built = fresh.set(specs([2, 3, 4, 5, 6, 7]));
    for (let i = 0n; i < 200n; i++) {
      const hash = BigInt.asUintN(64, i * 0x9e3779b97f4a7c15n);
      assert.equal(
        rebuilt.lb.choose({ hash, attempt: 0 })?.address,
        built.lb.choose({ hash, attempt: 0 })?.address,
        `${policy}: hash ${hash}`,
      );
    }
    for (const c of [kept, fresh]) {
      c.manager.close();
      c.ctx.store.close();
    }
  }
});
