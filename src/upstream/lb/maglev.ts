import type { Scope } from '../../stats/store.js';
import { mod64, xxHash64 } from '../hash.js';
import type { UpstreamHost } from '../types.js';
import type { HashTable, NormalizedWeights } from './thread-aware.js';

/** The reference's table size: a prime, so every skip visits every slot. */
export const MAGLEV_TABLE_SIZE = 65537;

/** A Maglev lookup table: slot -> index into `hosts`. */
export class MaglevTable implements HashTable {
  constructor(
    readonly slots: Int32Array,
    readonly hosts: UpstreamHost[],
  ) {}

  /** `table[hash % M]`; retry attempt k first flips the hash with `~0 - k + 1`, as the reference. */
  choose(hi: number, lo: number, attempt: number): UpstreamHost | null {
    if (this.hosts.length === 0) return null;
    let h1 = hi;
    let h2 = lo;
    if (attempt > 0) {
      h1 = (h1 ^ 0xffffffff) >>> 0;
      h2 = (h2 ^ (4294967296 - attempt)) >>> 0;
    }
    return this.hosts[this.slots[mod64(h1, h2, this.slots.length)]!]!;
  }
}

export interface MaglevStats {
  minEntriesPerHost: number;
  maxEntriesPerHost: number;
}

/**
 * A host's permutation of a table of `size` slots, `[offset, skip]`, kept on the host: the
 * two xxHash64 calls and BigInt remainders cost more than the fill itself, and a member's
 * address (so its permutation) never changes, so a rebuild hashes only the hosts it gains.
 */
function permutationOf(host: UpstreamHost, size: number, key: string): number[] {
  if (host.hashes?.key === key) return host.hashes.values;
  const bigSize = BigInt(size);
  const offset = Number(xxHash64(host.address) % bigSize);
  const skip = Number(xxHash64(host.address, 1n) % (bigSize - 1n)) + 1;
  host.hashes = { key, values: [offset, skip] };
  return host.hashes.values;
}

/**
 * Fills the table as the reference's `MaglevTable` (pseudocode listing 1 of the Maglev
 * paper, weighted): offset = xxHash64(addr, 0) % M, skip = xxHash64(addr, 1) % (M - 1) + 1;
 * on iteration n a host places an entry only once n * weight reaches its running target.
 * A host's next candidate slot, (offset + skip * j) % M, is kept and stepped by `skip`
 * with integer adds: the floating-point remainder per probe was most of a 10k-host build.
 */
export function buildMaglev(
  weights: NormalizedWeights,
  size = MAGLEV_TABLE_SIZE,
): { table: MaglevTable; stats: MaglevStats } {
  const n = weights.hosts.length;
  const skip = new Int32Array(n);
  const slot = new Int32Array(n);
  const count = new Int32Array(n);
  const target = new Float64Array(n);
  const key = `maglev ${size}`;
  for (let i = 0; i < n; i++) {
    const [offset, step] = permutationOf(weights.hosts[i]!, size, key);
    slot[i] = offset!;
    skip[i] = step!;
  }
  const slots = new Int32Array(size).fill(-1);
  let filled = 0;
  for (let iteration = 1; filled < size; iteration++) {
    for (let i = 0; i < n && filled < size; i++) {
      if (iteration * weights.weights[i]! < target[i]!) continue;
      target[i]! += weights.max;
      const step = skip[i]!;
      let c = slot[i]!;
      while (slots[c] !== -1) {
        c += step;
        if (c >= size) c -= size;
      }
      slots[c] = i;
      c += step;
      slot[i] = c >= size ? c - size : c;
      count[i]!++;
      filled++;
    }
  }
  let min = size;
  let max = 0;
  for (let i = 0; i < n; i++) {
    min = Math.min(min, count[i]!);
    max = Math.max(max, count[i]!);
  }
  return {
    table: new MaglevTable(slots, weights.hosts),
    stats: { minEntriesPerHost: min, maxEntriesPerHost: max },
  };
}

/** A Maglev table builder that reports `maglev_lb.*` gauges under the cluster scope. */
export function maglevTables(scope: Scope): (w: NormalizedWeights) => HashTable {
  const gauges = scope.scope('maglev_lb');
  return (weights) => {
    const { table, stats } = buildMaglev(weights);
    gauges.gauge('min_entries_per_host', 'NeverImport').set(stats.minEntriesPerHost);
    gauges.gauge('max_entries_per_host', 'NeverImport').set(stats.maxEntriesPerHost);
    return table;
  };
}
