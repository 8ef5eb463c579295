import assert from 'node:assert/strict';
import { before, test } from 'node:test';
import { prepareHashing, splitHash, xxHash64 } from '../../../src/upstream/hash.js';
import { buildLoadBalancer } from '../../../src/upstream/lb/index.js';
import { buildMaglev, MAGLEV_TABLE_SIZE } from '../../../src/upstream/lb/maglev.js';
import { normalizeWeights } from '../../../src/upstream/lb/thread-aware.js';
import { balancerInput, hostRange, upstreamHost } from '../../helpers/upstream.js';

before(prepareHashing);

test('a small equal-weight table equals the Maglev permutation fill done by hand', () => {
  const hosts = hostRange(3);
  const M = 13;
  const { table, stats } = buildMaglev(normalizeWeights(hosts), M);
  // Each host in turn takes the first free slot of its permutation (offset + skip * j) % M.
  const perm = hosts.map((h) => ({
    offset: Number(xxHash64(h.address) % BigInt(M)),
    skip: Number(xxHash64(h.address, 1n) % BigInt(M - 1)) + 1,
    next: 0,
  }));
  const expected = new Array<number>(M).fill(-1);
  for (let filled = 0; filled < M; ) {
    for (let i = 0; i < hosts.length && filled < M; i++) {
      const p = perm[i]!;
      let c = (p.offset + p.skip * p.next) % M;
      while (expected[c] !== -1) c = (p.offset + p.skip * ++p.next) % M;
      expected[c] = i;
      p.next++;
      filled++;
    }
  }
  assert.deepEqual(Array.from(table.slots), expected);
  assert.deepEqual(stats, { minEntriesPerHost: 4, maxEntriesPerHost: 5 });
});

test('weights set the share of the table', () => {
  const hosts = [upstreamHost('10.0.0.1:80', { weight: 1 }), upstreamHost('10.0.0.2:80', { weight: 2 })];
  const { stats } = buildMaglev(normalizeWeights(hosts));
  assert.ok(Math.abs(stats.minEntriesPerHost - MAGLEV_TABLE_SIZE / 3) < 2, String(stats.minEntriesPerHost));
  assert.equal(stats.minEntriesPerHost + stats.maxEntriesPerHost, MAGLEV_TABLE_SIZE);
});

test('lookup is table[hash % M]; a retry flips the hash with ~0 - k + 1', () => {
  const hosts = hostRange(5);
  const { table } = buildMaglev(normalizeWeights(hosts));
  for (let i = 0; i < 200; i++) {
    const h = xxHash64(`k${i}`);
    const [hi, lo] = splitHash(h);
    assert.equal(table.choose(hi, lo, 0), hosts[table.slots[Number(h % 65537n)]!]);
    for (const k of [1, 2]) {
      const flipped = h ^ ((1n << 64n) - BigInt(k));
      assert.equal(table.choose(hi, lo, k), hosts[table.slots[Number(flipped % 65537n)]!]);
    }
  }
});

test('about 1/N of keys move when a host leaves, and gauges report entries per host', () => {
  const hosts = hostRange(10);
  const input = balancerInput(hosts, { lb_policy: 'MAGLEV' });
  const before = buildLoadBalancer(input);
  assert.ok(input.stats.gauge('cluster.c.maglev_lb.min_entries_per_host').value >= 6553);
  assert.ok(input.stats.gauge('cluster.c.maglev_lb.max_entries_per_host').value <= 6554);
  const after = buildLoadBalancer(balancerInput(hosts.slice(1), { lb_policy: 'MAGLEV' }));
  let moved = 0;
  for (let i = 0; i < 10000; i++) {
    const hash = xxHash64(`key-${i}`);
    if (before.choose({ hash, attempt: 0 }) !== after.choose({ hash, attempt: 0 })) moved++;
  }
  assert.ok(moved / 10000 > 0.08 && moved / 10000 < 0.2, `moved ${moved / 10000}`);
});
