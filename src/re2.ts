/**
 * RE2 (re2-wasm) for every user-given pattern: linear-time matching, so no pattern can
 * stall the process. re2-wasm keeps each compiled pattern in one fixed 16 MiB WASM heap and
 * never frees it by itself; once the heap is full (about 20,000 simple patterns) every later
 * compile aborts, for the life of the process. Patterns compiled per request or only to be
 * checked are therefore freed here as soon as they are done with.
 *
 * re2-wasm is loaded on the first compile, not imported: loading it instantiates that 16 MiB
 * heap, and a worker whose routes and stats use no regex never needs it.
 */
import { createRequire } from 'node:module';
import type { RE2 } from 're2-wasm';

let loaded: typeof RE2 | null = null;

/** `new RE2(pattern, flags)`, loading re2-wasm the first time. Throws RE2's SyntaxError. */
export function newRe2(pattern: string, flags: string): RE2 {
  loaded ??= (createRequire(import.meta.url)('re2-wasm') as { RE2: typeof RE2 }).RE2;
  return new loaded(pattern, flags);
}

/** Returns a compiled pattern's WASM memory. The RE2 must not be used afterwards. */
export function freeRe2(re: RE2): void {
  (re as unknown as { wrapper: { delete(): void } }).wrapper.delete();
}

/**
 * A full-match RE2 for `pattern` (RE2's FullMatch, as the reference uses for `safe_regex`).
 * The bare pattern is compiled first, and freed: only a pattern valid by itself can be
 * anchored without `a)|(b` turning `^(?:a)|(b)$` into two partial matches. Throws
 * RE2's SyntaxError for an invalid pattern.
 */
export function fullMatchRe2(pattern: string): RE2 {
  freeRe2(newRe2(pattern, 'u'));
  return newRe2(`^(?:${pattern})$`, 'u');
}
