import { xxHash64 } from '../../upstream/hash.js';

const SAFE_BITS = (1n << 53n) - 1n;

/**
 * The value of the xDS `version` gauges for an accepted `version_info`. The reference sets them
 * to `HashUtil::xxHash64(version_info)` (seed 0), a 64-bit value; a gauge here is a JS number,
 * so it keeps the low 53 bits: equal to the reference's whenever that is below 2^53, and stable
 * across processes and restarts either way.
 */
export function versionHash(versionInfo: string): number {
  return Number(xxHash64(versionInfo) & SAFE_BITS);
}
