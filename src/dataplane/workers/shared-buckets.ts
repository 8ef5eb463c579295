/**
 * The cells of the process's local rate limit buckets (HTTP and network), in one
 * SharedArrayBuffer: the primary makes it and hands it to every data-plane worker in its `init`
 * message (a worker restarted after a crash gets the same one), so that every thread of the
 * process takes from the same tokens, as the reference's buckets are shared by its workers.
 *
 * A slot is two 64-bit cells: the 64-bit hash of its key (0: free), claimed with one
 * compare-and-swap, and the bucket's state (see bucket.ts). Slots are found by open addressing
 * from the key's hash, so every thread finds a key's slot with no message. Slots are never
 * freed: a key is what identifies a filter's config, so only configs never seen before take
 * new ones; 65,536 of them (1 MiB of address space, pages touched only where used) outlast any
 * config history a process sees. Past that a bucket falls back to a cell of its own thread.
 */

const SLOTS = 65_536;

let cells = new BigInt64Array(new SharedArrayBuffer(SLOTS * 2 * 8));

/** The buffer to hand a worker thread. */
export function bucketCells(): SharedArrayBuffer {
  return cells.buffer as SharedArrayBuffer;
}

/** A worker thread takes the primary's buffer, before it builds any listener. */
export function adoptBucketCells(buffer: SharedArrayBuffer): void {
  cells = new BigInt64Array(buffer);
}

/** FNV-1a over the key's UTF-16 units, 64-bit; never 0 (the free mark). */
function hash64(key: string): bigint {
  let h = 0xcbf29ce484222325n;
  for (let i = 0; i < key.length; i++)
    h = BigInt.asUintN(64, (h ^ BigInt(key.charCodeAt(i))) * 0x100000001b3n);
  const signed = BigInt.asIntN(64, h);
  return signed === 0n ? 1n : signed;
}

/** A bucket's state cell: `cells[index]`, the same for every thread asking with the same key. */
export interface BucketCell {
  cells: BigInt64Array;
  index: number;
}

/** The state cell of `key`'s bucket, claimed when no thread asked for it before. */
export function bucketCell(key: string): BucketCell {
  const h = hash64(key);
  const start = Number(BigInt.asUintN(64, h) % BigInt(SLOTS));
  for (let probe = 0; probe < SLOTS; probe++) {
    const slot = (start + probe) % SLOTS;
    const held = Atomics.compareExchange(cells, slot * 2, 0n, h);
    if (held === 0n || held === h) return { cells, index: slot * 2 + 1 };
  }
  return { cells: new BigInt64Array(1), index: 0 };
}
