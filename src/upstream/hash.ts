import xxhash, { type XXHashAPI } from 'xxhash-wasm';

let api: XXHashAPI | null = null;

/**
 * Loads the xxHash WebAssembly module once. Await it at start-up (the cluster manager
 * does): hashing on the request path must stay synchronous.
 */
export async function prepareHashing(): Promise<void> {
  api ??= await xxhash();
}

/** xxHash64 of the UTF-8 bytes of `input` (seed 0 unless given), as the reference's `HashUtil::xxHash64`. */
export function xxHash64(input: string, seed = 0n): bigint {
  if (!api)
    throw new Error('xxHash64 used before prepareHashing() resolved: await prepareHashing() at start-up');
  return api.h64(input, seed);
}

const MASK = 0xffffffffffffffffn;
const MUL = 0xc6a4a7935bd1e995n;

/** The seed the reference passes (`STD_HASH_SEED`, libstdc++'s `std::hash` seed). */
export const MURMUR_STD_SEED = 0xc70f6907n;

function shiftMix(v: bigint): bigint {
  return v ^ (v >> 47n);
}

/**
 * MurmurHash64A as libstdc++ `std::_Hash_bytes` computes it, which is what the reference's
 * `MurmurHash::murmurHash2_64` is. Only ring building uses it, so BigInt clarity wins over speed.
 */
export function murmurHash2_64(input: string, seed = MURMUR_STD_SEED): bigint {
  const bytes = Buffer.from(input, 'utf8');
  const len = bytes.length;
  const aligned = len & ~7;
  let hash = (seed ^ ((BigInt(len) * MUL) & MASK)) & MASK;
  for (let p = 0; p < aligned; p += 8) {
    const data = (shiftMix((bytes.readBigUInt64LE(p) * MUL) & MASK) * MUL) & MASK;
    hash = ((hash ^ data) * MUL) & MASK;
  }
  if ((len & 7) !== 0) {
    let data = 0n;
    for (let n = (len & 7) - 1; n >= 0; n--) data = (data << 8n) + BigInt(bytes[aligned + n] ?? 0);
    hash = ((hash ^ data) * MUL) & MASK;
  }
  hash = (shiftMix(hash) * MUL) & MASK;
  return shiftMix(hash);
}

/** High and low 32-bit halves of a 64-bit hash, so hot paths compare plain numbers. */
export function splitHash(hash: bigint): [hi: number, lo: number] {
  return [Number((hash >> 32n) & 0xffffffffn), Number(hash & 0xffffffffn)];
}

/**
 * `(hi * 2^32 + lo) % m` without BigInt; exact for `m` below 2^26 (100 and 65537 here),
 * because every intermediate product stays under 2^53.
 */
export function mod64(hi: number, lo: number, m: number): number {
  const base = 4294967296 % m;
  return ((hi % m) * base + (lo % m)) % m;
}
