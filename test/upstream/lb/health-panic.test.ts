/**
 * Every balancer honours host health and the panic threshold: an unhealthy member gets no
 * traffic while enough members are healthy; below the threshold the priority is in panic and
 * every member takes traffic (`lb_healthy_panic`); a threshold of 0 never panics.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { RawCluster } from '../../../events/index.js';
import { prepareHashing } from '../../../src/upstream/hash.js';
import { buildLoadBalancer } from '../../../src/upstream/lb/index.js';
import { balancerInput, tally, upstreamHost } from '../../helpers/upstream.js';

const POLICIES = ['ROUND_ROBIN', 'LEAST_REQUEST', 'RANDOM', 'RING_HASH', 'MAGLEV'];

function balancer(policy: string, failed: boolean[], cluster: Partial<RawCluster> = {}) {
  const hosts = failed.map((f, i) => upstreamHost(`10.0.0.${i + 1}:80`, { failed: f }));
  const input = balancerInput(hosts, { lb_policy: policy, ...cluster });
  const lb = buildLoadBalancer(input);
  let n = 0n;
  // Hashing balancers need a request hash: a different one per pick spreads them.
  const pick = () => {
    n += 7919n;
    return lb.choose({ hash: (n * 0x9e3779b97f4a7c15n) & 0xffffffffffffffffn, attempt: 0 });
  };
  const panics = () => input.stats.counters.get('cluster.c.lb_healthy_panic')?.value ?? 0;
  return { pick, panics };
}

test('an unhealthy member gets no traffic from any balancer while the priority is not in panic', async () => {
  await prepareHashing();
  for (const policy of POLICIES) {
    const { pick, panics } = balancer(policy, [false, false, false, true]);
    const counts = tally(pick, 400);
    assert.equal(counts.get('10.0.0.4:80'), undefined, `${policy} sent traffic to the failing host`);
    assert.equal(counts.size, 3, `${policy} uses the three healthy hosts`);
    assert.equal(panics(), 0);
  }
});

test('below healthy_panic_threshold every balancer uses all members and counts lb_healthy_panic; 0 disables panic', async () => {
  await prepareHashing();
  for (const policy of POLICIES) {
    const inPanic = balancer(policy, [false, true, true, true]);
    const counts = tally(inPanic.pick, 400);
    assert.equal(counts.size, 4, `${policy} in panic spreads over every member`);
    assert.equal(inPanic.panics(), 400);
    const never = balancer(policy, [false, true, true, true], {
      common_lb_config: { healthy_panic_threshold: {} },
    });
    const only = tally(never.pick, 100);
    assert.deepEqual([...only.keys()], ['10.0.0.1:80'], `${policy} without panic keeps to the healthy host`);
    const none = balancer(policy, [true, true], { common_lb_config: { healthy_panic_threshold: {} } });
    assert.equal(none.pick(), null, `${policy}: no healthy member and no panic: no host`);
  }
});
