import type { ClusterSettings } from '../../../reducers/settings/cluster.js';
import type { Scope } from '../../stats/store.js';
import { murmurHash2_64, splitHash, xxHash64 } from '../hash.js';
import type { UpstreamHost } from '../types.js';
import type { HashTable, NormalizedWeights } from './thread-aware.js';

/** Largest ring the reference allows (8M entries). */
export const MAX_RING_SIZE = 8 * 1024 * 1024;

/** A sorted ring: entry k has hash `hi[k] * 2^32 + lo[k]` and host `hosts[k]`. */
export class Ring implements HashTable {
  constructor(
    readonly hi: Uint32Array,
    readonly lo: Uint32Array,
    readonly hosts: UpstreamHost[],
  ) {}

  /**
   * The reference's ketama lookup, quirks included: binary search for the first entry whose
   * hash is >= h (wrapping to entry 0), then retry attempt k takes entry (idx + k) % size.
   */
  choose(h1: number, h2: number, attempt: number): UpstreamHost | null {
    const size = this.hosts.length;
    if (size === 0) return null;
    const { hi, lo } = this;
    let lowp = 0;
    let highp = size;
    let midp = 0;
    for (;;) {
      midp = Math.trunc((lowp + highp) / 2);
      if (midp === size) {
        midp = 0;
        break;
      }
      const mh = hi[midp]!;
      const ml = lo[midp]!;
      const hLeMid = h1 < mh || (h1 === mh && h2 <= ml);
      const ph = midp === 0 ? 0 : hi[midp - 1]!;
      const pl = midp === 0 ? 0 : lo[midp - 1]!;
      const hGtPrev = h1 > ph || (h1 === ph && h2 > pl);
      if (hLeMid && hGtPrev) break;
      if (!hLeMid) lowp = midp + 1;
      else highp = midp - 1;
      if (lowp > highp) {
        midp = 0;
        break;
      }
    }
    if (attempt > 0) midp = (midp + attempt) % size;
    return this.hosts[midp]!;
  }
}

export interface RingStats {
  size: number;
  minHashesPerHost: number;
  maxHashesPerHost: number;
}

/**
 * Builds the ring as the reference does: the least weighted host gets a whole number of
 * entries (at least `minimum_ring_size` in total, at most `maximum_ring_size`); hosts are
 * walked in order with running sums, entry i of a host hashing `<ip:port>_<i>`.
 */
export function buildRing(
  weights: NormalizedWeights,
  settings: ClusterSettings['ringHash'],
): { ring: Ring; stats: RingStats } {
  const { minimumRingSize, maximumRingSize, hashFunction } = settings;
  if (minimumRingSize > maximumRingSize) {
    throw new Error(
      `ring hash: minimum_ring_size (${minimumRingSize}) > maximum_ring_size (${maximumRingSize}); lower ring_hash_lb_config.minimum_ring_size`,
    );
  }
  const maxSize = Math.min(maximumRingSize, MAX_RING_SIZE);
  const scale = Math.min(
    Math.ceil(weights.min * Math.min(minimumRingSize, MAX_RING_SIZE)) / weights.min,
    maxSize,
  );
  const ringSize = Math.ceil(scale);
  const hosts = weights.hosts;
  // Entries per host from the running sums, first, so the entries fill typed arrays.
  const entries = new Int32Array(hosts.length);
  let current = 0;
  let target = 0;
  let minHashes = ringSize;
  let maxHashes = 0;
  for (let k = 0; k < hosts.length; k++) {
    target += scale * weights.weights[k]!;
    const i = Math.max(0, Math.ceil(target - current));
    entries[k] = i;
    current += i;
    minHashes = Math.min(i, minHashes);
    maxHashes = Math.max(i, maxHashes);
  }
  const his = new Uint32Array(current);
  const los = new Uint32Array(current);
  const owner = new Int32Array(current);
  const hash = hashFunction === 'MURMUR_HASH_2' ? murmurHash2_64 : xxHash64;
  let e = 0;
  for (let k = 0; k < hosts.length; k++) {
    const count = entries[k]!;
    const hashes = entryHashes(hosts[k]!, hashFunction, hash, count);
    for (let i = 0; i < count; i++, e++) {
      his[e] = hashes[2 * i]!;
      los[e] = hashes[2 * i + 1]!;
      owner[e] = k;
    }
  }
  const order = sortedOrder(his, los);
  const ringHosts = new Array<UpstreamHost>(current);
  const ringHi = new Uint32Array(current);
  const ringLo = new Uint32Array(current);
  for (let j = 0; j < current; j++) {
    const k = order[j]!;
    ringHi[j] = his[k]!;
    ringLo[j] = los[k]!;
    ringHosts[j] = hosts[owner[k]!]!;
  }
  return {
    ring: new Ring(ringHi, ringLo, ringHosts),
    stats: { size: ringSize, minHashesPerHost: minHashes, maxHashesPerHost: maxHashes },
  };
}

/**
 * The halves of a host's entry hashes (`<ip:port>_<i>`), kept on the host: its address never
 * changes, so a rebuild hashes only the members it gains (or the entries a new weight adds),
 * not every entry of the ring again.
 */
function entryHashes(
  host: UpstreamHost,
  key: string,
  hash: (input: string) => bigint,
  count: number,
): number[] {
  let cached = host.hashes;
  if (!cached || cached.key !== key) {
    cached = { key, values: [] };
    host.hashes = cached;
  }
  const values = cached.values;
  for (let i = values.length / 2; i < count; i++) {
    const [hi, lo] = splitHash(hash(`${host.address}_${i}`));
    values.push(hi, lo);
  }
  return values;
}

/**
 * The entry indexes ordered by 64-bit hash (`hi`, then `lo`), equal hashes in entry order:
 * a stable LSD radix sort, six linear passes of 11, 11 and 10 bits of each half (2,048
 * counters, 8 KB), where a comparison sort of a 10k-entry ring cost milliseconds.
 */
function sortedOrder(hi: Uint32Array, lo: Uint32Array): Uint32Array {
  const n = hi.length;
  let order = new Uint32Array(n);
  for (let k = 0; k < n; k++) order[k] = k;
  let spare = new Uint32Array(n);
  const starts = new Uint32Array(2049);
  for (const words of [lo, hi]) {
    for (const shift of [0, 11, 22]) {
      starts.fill(0);
      for (let k = 0; k < n; k++) starts[((words[k]! >>> shift) & 0x7ff) + 1]!++;
      for (let d = 1; d <= 2048; d++) starts[d]! += starts[d - 1]!;
      for (let j = 0; j < n; j++) {
        const k = order[j]!;
        spare[starts[(words[k]! >>> shift) & 0x7ff]!++] = k;
      }
      [order, spare] = [spare, order];
    }
  }
  return order;
}

/** A ring table builder that reports `ring_hash_lb.*` gauges under the cluster scope. */
export function ringTables(settings: ClusterSettings, scope: Scope): (w: NormalizedWeights) => HashTable {
  const gauges = scope.scope('ring_hash_lb');
  return (weights) => {
    const { ring, stats } = buildRing(weights, settings.ringHash);
    gauges.gauge('size', 'NeverImport').set(stats.size);
    gauges.gauge('min_hashes_per_host', 'NeverImport').set(stats.minHashesPerHost);
    gauges.gauge('max_hashes_per_host', 'NeverImport').set(stats.maxHashesPerHost);
    return ring;
  };
}
