import type { RE2 } from 're2-wasm';
import { freeRe2, newRe2 } from '../re2.js';

/** A compiled `/stats?filter=`: a partial-match test on stat names. */
export type NameFilter = (name: string) => boolean;

/**
 * Compiled filters by pattern, with the RE2 each holds (none for a literal). RE2s live in a
 * fixed WASM heap (see `src/re2.ts`), so the cache is bounded and frees what it evicts.
 */
const cache = new Map<string, { filter: NameFilter; re2: RE2 | null }>();
const CACHE_SIZE = 32;

/** RE2 metacharacters outside a class: a pattern without them is a plain string. */
const META = '.+*?()[]{}|^$';

/**
 * A string test for the common literal filters (`upstream_rq`, `^cluster\.web\.`, `_2xx$`),
 * which skips the WASM call: one costs ~3 µs per name, most of it moving the string into
 * WASM memory, against ~0.05 µs for `includes`. Null when the pattern is not a literal.
 */
function literalFilter(pattern: string): NameFilter | null {
  const anchoredStart = pattern.startsWith('^');
  let body = '';
  let anchoredEnd = false;
  for (let i = anchoredStart ? 1 : 0; i < pattern.length; i++) {
    const c = pattern[i]!;
    if (c === '\\') {
      const next = pattern[i + 1];
      if (next === undefined || /[A-Za-z0-9]/.test(next)) return null;
      body += next;
      i++;
    } else if (c === '$' && i === pattern.length - 1) {
      anchoredEnd = true;
    } else if (META.includes(c)) {
      return null;
    } else {
      body += c;
    }
  }
  if (anchoredStart && anchoredEnd) return (name) => name === body;
  if (anchoredStart) return (name) => name.startsWith(body);
  if (anchoredEnd) return (name) => name.endsWith(body);
  return (name) => name.includes(body);
}

/**
 * Compiles `pattern` with RE2 (partial match unless anchored); null when RE2 rejects it.
 * Matching runs on RE2 itself, never on a backtracking JS RegExp: a filter such as
 * `^([a-z_.]+)+!$` takes linear time instead of freezing the process. A filter is good for
 * the synchronous render that asked for it: a later call may evict and free it.
 */
export function compileFilter(pattern: string): NameFilter | null {
  const hit = cache.get(pattern);
  if (hit) return hit.filter;
  let re2: RE2;
  try {
    re2 = newRe2(pattern, 'u');
  } catch {
    return null;
  }
  const literal = literalFilter(pattern);
  if (literal) freeRe2(re2);
  const entry = literal ? { filter: literal, re2: null } : { filter: (name: string) => re2.test(name), re2 };
  if (cache.size >= CACHE_SIZE) {
    const [oldest, evicted] = cache.entries().next().value!;
    cache.delete(oldest);
    if (evicted.re2) freeRe2(evicted.re2);
  }
  cache.set(pattern, entry);
  return entry.filter;
}
