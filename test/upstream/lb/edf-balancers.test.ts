import assert from 'node:assert/strict';
import { test } from 'node:test';
import { LeastRequestBalancer } from '../../../src/upstream/lb/least-request.js';
import { RandomBalancer } from '../../../src/upstream/lb/random.js';
import { RoundRobinBalancer } from '../../../src/upstream/lb/round-robin.js';
import { balancerInput, hostRange, tally, upstreamHost } from '../../helpers/upstream.js';

const NO_HASH = { hash: null, attempt: 0 };

test('round robin with equal weights rotates from the seed', () => {
  const hosts = hostRange(3);
  const lb = new RoundRobinBalancer(balancerInput(hosts, {}, { memory: { seed: 4, rrIndexes: [] } }));
  const order = Array.from({ length: 6 }, () => lb.choose(NO_HASH)?.address);
  // seed 4 % 3 = 1: the rotation starts at the second host.
  assert.deepEqual(
    order,
    [1, 2, 0, 1, 2, 0].map((i) => hosts[i]!.address),
  );
});

test('round robin keeps its position across rebuilds of the same cluster', () => {
  const hosts = hostRange(4);
  const memory = { seed: 0, rrIndexes: [] };
  const first = new RoundRobinBalancer(balancerInput(hosts, {}, { memory }));
  first.choose(NO_HASH);
  const second = new RoundRobinBalancer(balancerInput(hosts, {}, { memory }));
  assert.equal(second.choose(NO_HASH), hosts[1]);
});

test('weighted round robin follows the EDF schedule exactly', () => {
  const [a, b, c] = [1, 2, 3].map((w, i) => upstreamHost(`10.0.0.${i + 1}:80`, { weight: w }));
  const lb = new RoundRobinBalancer(balancerInput([a!, b!, c!]));
  // Deadlines 1, 1/2, 1/3: c, b, c, then the three due at 1.0 in insertion order a, b, c.
  const cycle = Array.from({ length: 6 }, () => lb.choose(NO_HASH));
  assert.deepEqual(cycle, [c, b, c, a, b, c]);
  const counts = tally(() => lb.choose(NO_HASH), 6000);
  assert.deepEqual(
    [a, b, c].map((h) => counts.get(h!.address)),
    [1000, 2000, 3000],
  );
});

test('least request (equal weights) prefers idle hosts, ties to the first sample', () => {
  const idle = upstreamHost('10.0.0.1:80');
  const busy = upstreamHost('10.0.0.2:80', { rqActive: 5 });
  const lb = new LeastRequestBalancer(balancerInput([idle, busy]));
  const counts = tally(() => lb.choose(NO_HASH), 4000);
  // The busy host wins only when both samples are it: one draw in four.
  const share = (counts.get(busy.address) ?? 0) / 4000;
  assert.ok(share > 0.2 && share < 0.3, `busy share ${share}`);
  const three = new LeastRequestBalancer(
    balancerInput([idle, busy], { least_request_lb_config: { choice_count: 3 } }),
  );
  const withThree = (tally(() => three.choose(NO_HASH), 4000).get(busy.address) ?? 0) / 4000;
  assert.ok(withThree < 0.17, `three choices make the busy host rarer: ${withThree}`);
});

test('least request (unequal weights) divides weight by active requests + 1', () => {
  const heavy = upstreamHost('10.0.0.1:80', { weight: 2, rqActive: 3 });
  const light = upstreamHost('10.0.0.2:80', { weight: 1 });
  const lb = new LeastRequestBalancer(balancerInput([heavy, light]));
  const counts = tally(() => lb.choose(NO_HASH), 3000);
  // Effective weights 2/4 and 1/1: the light, idle host gets two picks in three.
  assert.ok(Math.abs((counts.get(light.address) ?? 0) - 2000) <= 2, JSON.stringify([...counts]));
});

test('random is uniform over the hosts with a seeded source', () => {
  const hosts = hostRange(4, { weight: 1 });
  hosts[0]!.state.weight = 7; // weights do not matter to RANDOM
  const lb = new RandomBalancer(balancerInput(hosts));
  const counts = tally(() => lb.choose(NO_HASH), 40000);
  for (const h of hosts) {
    const n = counts.get(h.address) ?? 0;
    assert.ok(Math.abs(n - 10000) < 500, `${h.address}: ${n}`);
  }
});

test('spill-over: traffic follows the priority loads', () => {
  const p0 = [
    upstreamHost('10.0.0.1:80'),
    ...[2, 3, 4].map((i) => upstreamHost(`10.0.0.${i}:80`, { failed: true })),
  ];
  const p1 = [upstreamHost('10.1.0.1:80', { priority: 1 }), upstreamHost('10.1.0.2:80', { priority: 1 })];
  const lb = new RoundRobinBalancer(balancerInput([...p0, ...p1]));
  const counts = tally(() => lb.choose(NO_HASH), 20000);
  const share0 = (counts.get('10.0.0.1:80') ?? 0) / 20000;
  assert.ok(Math.abs(share0 - 0.35) < 0.02, `priority 0 share ${share0}`);
  assert.equal(counts.get('10.0.0.2:80'), undefined, 'unhealthy hosts get nothing');
});

test('panic: all hosts of the priority are used and lb_healthy_panic counts it', () => {
  const hosts = [
    upstreamHost('10.0.0.1:80'),
    ...hostRange(3, { failed: true }).map((h, i) => ({ ...h, address: `10.9.0.${i}:80` })),
  ];
  const input = balancerInput(hosts);
  const lb = new RoundRobinBalancer(input);
  const counts = tally(() => lb.choose(NO_HASH), 400);
  assert.equal(counts.size, 4);
  assert.equal(input.stats.counter('cluster.c.lb_healthy_panic').value, 400);
  const calm = new RoundRobinBalancer(balancerInput(hosts, {}, { panicThreshold: 0 }));
  assert.deepEqual([...tally(() => calm.choose(NO_HASH), 100).keys()], ['10.0.0.1:80']);
});

test('no hosts: no choice', () => {
  assert.equal(new RoundRobinBalancer(balancerInput([])).choose(NO_HASH), null);
  assert.equal(new LeastRequestBalancer(balancerInput([])).choose(NO_HASH), null);
});
