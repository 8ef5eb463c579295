import { RE2 } from 're2-wasm';

/** A compiled `/stats?filter=`: a partial-match test on stat names. */
export type NameFilter = (name: string) => boolean;

/** Compiled filters by pattern; RE2 objects hold WASM memory, so the cache is bounded. */
const cache = new Map<string, NameFilter>();
const CACHE_SIZE = 32;

/**
 * Compiles `pattern` with RE2 semantics (partial match unless anchored); null when RE2
 * rejects it. RE2 decides validity; matching runs on a JS RegExp when the pattern also
 * compiles in JS unicode mode, whose strict syntax rejects the RE2-only constructs (`(?i)`,
 * `\pN`, `[[:alpha:]]`, `\z`, `\Q`), so both engines agree on every pattern it accepts.
 * A WASM call per name costs microseconds; a million names would take seconds.
 */
export function compileFilter(pattern: string): NameFilter | null {
  const hit = cache.get(pattern);
  if (hit) return hit;
  let re2: RE2;
  try {
    re2 = new RE2(pattern, 'u');
  } catch {
    return null;
  }
  let filter: NameFilter;
  try {
    const js = new RegExp(pattern, 'u');
    filter = (name) => js.test(name);
  } catch {
    filter = (name) => re2.test(name);
  }
  if (cache.size >= CACHE_SIZE) cache.delete(cache.keys().next().value!);
  cache.set(pattern, filter);
  return filter;
}
