/**
 * A source of uniformly distributed unsigned 32-bit integers. Balancers take one so tests
 * can seed them; production uses `defaultRandom`.
 */
export type Random = () => number;

/** `Math.random` scaled to an unsigned 32-bit integer. */
export const defaultRandom: Random = () => Math.floor(Math.random() * 4294967296);

/** A deterministic source (mulberry32) for tests and benchmarks. */
export function seededRandom(seed: number): Random {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return (t ^ (t >>> 14)) >>> 0;
  };
}
