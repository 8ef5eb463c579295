import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { RawCluster } from '../../../events/index.js';
import { compileCriteria } from '../../../src/upstream/lb/criteria.js';
import { buildLoadBalancer } from '../../../src/upstream/lb/index.js';
import type { LbMemory } from '../../../src/upstream/lb/input.js';
import { balancerInput, tally, upstreamHost } from '../../helpers/upstream.js';

const subsets: Partial<RawCluster> = {
  lb_subset_config: { subset_selectors: [{ keys: ['version'] }], fallback_policy: 'ANY_ENDPOINT' },
};
const v = (version: string) => ({ metadata: { 'proxy.lb': { version } } });
const criteria = (version: string) => compileCriteria({ filter_metadata: { 'proxy.lb': { version } } });

test('rebuilds keep subset memory: created and removed count only what changed, active follows', () => {
  const memory: LbMemory = { seed: 0, rrIndexes: [] };
  const first = balancerInput(
    [upstreamHost('10.0.0.1:80', v('v1')), upstreamHost('10.0.0.2:80', v('v2'))],
    subsets,
    {
      memory,
    },
  );
  buildLoadBalancer(first);
  const stats = first.stats;
  const value = (n: string) => stats.counter(`cluster.c.${n}`).value;
  assert.deepEqual([value('lb_subsets_created'), value('lb_subsets_removed')], [2, 0]);
  buildLoadBalancer({
    ...first,
    hosts: [upstreamHost('10.0.0.1:80', v('v1')), upstreamHost('10.0.0.2:80', v('v3'))],
  });
  assert.deepEqual([value('lb_subsets_created'), value('lb_subsets_removed')], [3, 1]);
  assert.equal(stats.gauge('cluster.c.lb_subsets_active').value, 2);
});

test('a subset is balanced by the cluster policy over its own members, weights included', () => {
  const hosts = [
    upstreamHost('10.0.0.1:80', { ...v('v1'), weight: 3 }),
    upstreamHost('10.0.0.2:80', { ...v('v1'), weight: 1 }),
    upstreamHost('10.0.0.3:80', v('v2')),
  ];
  const lb = buildLoadBalancer(balancerInput(hosts, subsets));
  const counts = tally(() => lb.choose({ hash: null, attempt: 0, criteria: criteria('v1') }), 400);
  // EDF by weight is exact over whole rounds: 3:1, and nothing outside the subset.
  assert.deepEqual(Object.fromEntries(counts), { '10.0.0.1:80': 300, '10.0.0.2:80': 100 });
});

test('an unhealthy subset is not a missing one: no fallback when its members are down', () => {
  const hosts = [
    upstreamHost('10.0.0.1:80', { ...v('v1'), failed: true }),
    upstreamHost('10.0.0.2:80', v('v2')),
  ];
  const input = balancerInput(hosts, {
    ...subsets,
    common_lb_config: { healthy_panic_threshold: {} },
  });
  const lb = buildLoadBalancer(input);
  assert.equal(lb.choose({ hash: null, attempt: 0, criteria: criteria('v1') }), null);
  assert.equal(input.stats.counter('cluster.c.lb_subsets_fallback').value, 0);
});

test('locality_weight_aware and scale_locality_weight: subsets follow locality weights, scaled by their share', () => {
  const host = (n: number, zone: string, weight: number, version: string) =>
    upstreamHost(`10.0.0.${n}:80`, {
      ...v(version),
      locality: { region: '', zone, sub_zone: '' },
      localityWeight: weight,
    });
  // Subset v1: one host in a (weight 1, all of a's hosts), one in b (weight 2, a third of b's).
  const hosts = [host(1, 'a', 1, 'v1'), host(2, 'b', 2, 'v1'), host(3, 'b', 2, 'v2'), host(4, 'b', 2, 'v2')];
  const split = (subset: Record<string, unknown>) => {
    const lb = buildLoadBalancer(
      balancerInput(hosts, {
        common_lb_config: { locality_weighted_lb_config: {} },
        lb_subset_config: { subset_selectors: [{ keys: ['version'] }], ...subset },
      }),
    );
    const counts = tally(() => lb.choose({ hash: null, attempt: 0, criteria: criteria('v1') }), 3000);
    return [counts.get('10.0.0.1:80') ?? 0, counts.get('10.0.0.2:80') ?? 0];
  };
  assert.deepEqual(split({}), [1500, 1500], 'without locality_weight_aware: the subset ignores localities');
  assert.deepEqual(split({ locality_weight_aware: true }), [1000, 2000]);
  assert.deepEqual(split({ locality_weight_aware: true, scale_locality_weight: true }), [1800, 1200]);
});
