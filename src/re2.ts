/**
 * RE2 (re2-wasm) for every user-given pattern: linear-time matching, so no pattern can
 * stall the process. re2-wasm keeps each compiled pattern in one fixed 16 MiB WASM heap and
 * never frees it by itself; once the heap is full (about 20,000 simple patterns) every later
 * compile aborts, for the life of the process. Patterns compiled per request or only to be
 * checked are therefore freed here as soon as they are done with.
 */
import { RE2 } from 're2-wasm';

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
  freeRe2(new RE2(pattern, 'u'));
  return new RE2(`^(?:${pattern})$`, 'u');
}
