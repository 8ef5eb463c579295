import assert from 'node:assert/strict';
import { before, test } from 'node:test';
import { murmurHash2_64, prepareHashing, splitHash, xxHash64 } from '../../../src/upstream/hash.js';
import { buildLoadBalancer } from '../../../src/upstream/lb/index.js';
import { buildRing } from '../../../src/upstream/lb/ring-hash.js';
import { normalizeWeights } from '../../../src/upstream/lb/thread-aware.js';
import { seededRandom } from '../../../src/upstream/random.js';
import type { UpstreamHost } from '../../../src/upstream/types.js';
import { balancerInput, hostRange, tally, upstreamHost } from '../../helpers/upstream.js';

before(prepareHashing);

const RING = { minimumRingSize: 1024, maximumRingSize: 8388608, hashFunction: 'XX_HASH' };

function ringHashes(ring: { hi: Uint32Array; lo: Uint32Array }): bigint[] {
  return Array.from(ring.hi, (hi, k) => (BigInt(hi) << 32n) | BigInt(ring.lo[k]!));
}

/** Lower bound with wrap-around, written the plain way, to check the ketama search against. */
function lowerBound(hashes: bigint[], h: bigint): number {
  const k = hashes.findIndex((x) => x >= h);
  return Math.max(k, 0);
}

function random64(random: () => number): bigint {
  return (BigInt(random()) << 32n) | BigInt(random());
}

test('a two-host ring equals the hand-computed one', () => {
  const a = upstreamHost('10.0.0.1:80');
  const b = upstreamHost('10.0.0.2:80');
  // Minimum 4: scale = ceil(0.5 * 4) / 0.5 = 4 entries, two per host, keys `<ip:port>_<i>`.
  const { ring, stats } = buildRing(normalizeWeights([a, b]), { ...RING, minimumRingSize: 4 });
  const expected = [
    ['10.0.0.1:80_0', a],
    ['10.0.0.1:80_1', a],
    ['10.0.0.2:80_0', b],
    ['10.0.0.2:80_1', b],
  ] as const;
  const sorted = expected
    .map(([key, host]) => ({ hash: xxHash64(key), host }))
    .sort((x, y) => (x.hash < y.hash ? -1 : 1));
  assert.equal(xxHash64('10.0.0.1:80_0'), 0x75041381e7371a08n, 'the key of the first entry');
  assert.deepEqual(
    ringHashes(ring),
    sorted.map((e) => e.hash),
  );
  assert.deepEqual(
    ring.hosts,
    sorted.map((e) => e.host),
  );
  assert.deepEqual(stats, { size: 4, minHashesPerHost: 2, maxHashesPerHost: 2 });
  // An exact hit takes that entry; past the last entry wraps to the first.
  for (const [k, e] of sorted.entries()) {
    const [hi, lo] = splitHash(e.hash);
    assert.equal(ring.choose(hi, lo, 0), e.host);
    assert.equal(ring.choose(hi, lo, 1), sorted[(k + 1) % 4]!.host, 'retry attempt 1 takes the next entry');
  }
  assert.equal(ring.choose(0xffffffff, 0xffffffff, 0), sorted[0]!.host);
});

test('MURMUR_HASH_2 rings use MurmurHash64A keys', () => {
  const a = upstreamHost('10.0.0.1:80');
  const { ring } = buildRing(normalizeWeights([a]), {
    ...RING,
    minimumRingSize: 1,
    hashFunction: 'MURMUR_HASH_2',
  });
  assert.deepEqual(ringHashes(ring), [0xbd8f6461ecffb28cn]);
  assert.equal(murmurHash2_64('10.0.0.1:80_0'), 0xbd8f6461ecffb28cn);
});

test('weights scale the entries and the ketama search equals a lower bound', () => {
  const hosts = [upstreamHost('10.0.0.1:80', { weight: 1 }), upstreamHost('10.0.0.2:80', { weight: 3 })];
  const { ring, stats } = buildRing(normalizeWeights(hosts), RING);
  // scale = ceil(0.25 * 1024) / 0.25 = 1024 entries, a quarter of them for the light host.
  assert.deepEqual(stats, { size: 1024, minHashesPerHost: 256, maxHashesPerHost: 768 });
  const hashes = ringHashes(ring);
  const random = seededRandom(7);
  for (let i = 0; i < 5000; i++) {
    const h = random64(random);
    const [hi, lo] = splitHash(h);
    assert.equal(ring.choose(hi, lo, 0), ring.hosts[lowerBound(hashes, h)]);
  }
});

test('the same key keeps its host; about 1/N of keys move when a host leaves', () => {
  const hosts = hostRange(10);
  const before = buildLoadBalancer(balancerInput(hosts, { lb_policy: 'RING_HASH' }));
  const after = buildLoadBalancer(balancerInput(hosts.slice(1), { lb_policy: 'RING_HASH' }));
  let moved = 0;
  let fromRemoved = 0;
  for (let i = 0; i < 10000; i++) {
    const hash = xxHash64(`key-${i}`);
    const was = before.choose({ hash, attempt: 0 });
    assert.equal(before.choose({ hash, attempt: 0 }), was);
    const now = after.choose({ hash, attempt: 0 });
    if (was === hosts[0]) fromRemoved++;
    if (now !== was) moved++;
  }
  assert.ok(moved >= fromRemoved, 'every key of the removed host moved');
  assert.ok(moved / 10000 > 0.05 && moved / 10000 < 0.2, `moved ${moved / 10000}`);
});

test('ring hash gauges and random choice without a request hash', () => {
  const hosts = hostRange(3);
  const input = balancerInput(hosts, {
    lb_policy: 'RING_HASH',
    ring_hash_lb_config: { minimum_ring_size: '30' },
  });
  const lb = buildLoadBalancer(input);
  assert.equal(input.stats.gauge('cluster.c.ring_hash_lb.size').value, 30);
  assert.equal(input.stats.gauge('cluster.c.ring_hash_lb.min_hashes_per_host').value, 10);
  const counts = tally(() => lb.choose({ hash: null, attempt: 0 }), 3000);
  assert.equal(counts.size, 3, 'no hash: any host');
});

test('a ring whose minimum exceeds its maximum is refused with both sizes named', () => {
  assert.throws(
    () =>
      buildRing(normalizeWeights([upstreamHost('10.0.0.1:80')]), {
        ...RING,
        minimumRingSize: 10,
        maximumRingSize: 5,
      }),
    /minimum_ring_size \(10\) > maximum_ring_size \(5\)/,
  );
});

test('unhealthy hosts leave the ring unless the priority panics', () => {
  const hosts: UpstreamHost[] = [...hostRange(3), upstreamHost('10.0.9.1:80', { failed: true })];
  const lb = buildLoadBalancer(balancerInput(hosts, { lb_policy: 'RING_HASH' }));
  const counts = tally(() => lb.choose({ hash: xxHash64(String(Math.random())), attempt: 0 }), 2000);
  assert.equal(counts.get('10.0.9.1:80'), undefined);
});
