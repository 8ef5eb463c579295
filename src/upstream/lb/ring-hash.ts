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
  const hash =
    hashFunction === 'MURMUR_HASH_2' ? (key: string) => murmurHash2_64(key) : (key: string) => xxHash64(key);
  const his: number[] = [];
  const los: number[] = [];
  const owners: UpstreamHost[] = [];
  let current = 0;
  let target = 0;
  let minHashes = ringSize;
  let maxHashes = 0;
  weights.hosts.forEach((host, k) => {
    target += scale * weights.weights[k]!;
    let i = 0;
    while (current < target) {
      const [hi, lo] = splitHash(hash(`${host.address}_${i}`));
      his.push(hi);
      los.push(lo);
      owners.push(host);
      i++;
      current++;
    }
    minHashes = Math.min(i, minHashes);
    maxHashes = Math.max(i, maxHashes);
  });
  const order = Array.from(owners.keys()).sort((a, b) => his[a]! - his[b]! || los[a]! - los[b]!);
  const ring = new Ring(
    Uint32Array.from(order, (k) => his[k]!),
    Uint32Array.from(order, (k) => los[k]!),
    order.map((k) => owners[k]!),
  );
  return { ring, stats: { size: ringSize, minHashesPerHost: minHashes, maxHashesPerHost: maxHashes } };
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
