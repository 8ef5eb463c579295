/**
 * `type.matcher.StringMatcher` and RE2 patterns as compiled tests: config compile shared by the
 * router, the HTTP filters, access log filters and TLS SAN matching, so it stands below all of
 * them (docs/design.md, "Arrows that run back up").
 */
import type { RE2 } from 're2-wasm';
import type { JsonObject } from '../../events/config.js';
import { objectOf } from '../../reducers/settings/values.js';
import { fault } from '../bootstrap/report.js';
import { fullMatchRe2 } from '../re2.js';

/** A compiled predicate over a string. */
export type StringTest = (value: string) => boolean;

/**
 * Route-table regexes by pattern, shared by every table that uses them. Nothing tells a
 * compile step when the table it built is dropped, and re2-wasm never frees a pattern by
 * itself (see `src/re2.ts`): without sharing, each route update would leak its patterns
 * until the WASM heap is full. Patterns come from configuration, so the set stays small.
 */
const compiledRegexes = new Map<string, RE2>();

/**
 * A full-string RE2 matcher for `safe_regex` (`{ google_re2: {}, regex }`) or the deprecated
 * plain `regex` strings. RE2 semantics via re2-wasm: no backreferences or lookaround.
 * Throws a ConfigFault naming the pattern when it does not compile. Compiled when the route
 * table is; matching is linear in the input.
 */
export function compileRegex(pattern: string, where: string): StringTest {
  let re = compiledRegexes.get(pattern);
  if (!re) {
    try {
      re = fullMatchRe2(pattern);
    } catch (err) {
      throw fault(where, `invalid regex '${pattern}': ${(err as Error).message}`);
    }
    compiledRegexes.set(pattern, re);
  }
  const compiled = re;
  return (value) => compiled.test(value);
}

/** `type.matcher.StringMatcher` (exact, prefix, suffix, regex, safe_regex, contains; ignore_case). */
export function compileStringMatcher(raw: JsonObject, where: string): StringTest {
  const ignoreCase = raw.ignore_case === true;
  const norm = (s: string) => (ignoreCase ? s.toLowerCase() : s);
  if (typeof raw.exact === 'string') {
    const want = norm(raw.exact);
    return (v) => norm(v) === want;
  }
  if (typeof raw.prefix === 'string') {
    const want = norm(raw.prefix);
    return (v) => norm(v).startsWith(want);
  }
  if (typeof raw.suffix === 'string') {
    const want = norm(raw.suffix);
    return (v) => norm(v).endsWith(want);
  }
  if (typeof raw.contains === 'string') {
    const want = norm(raw.contains);
    return (v) => norm(v).includes(want);
  }
  // The deprecated plain `regex` is matched with RE2 too (the reference's v2 used std::regex).
  if (typeof raw.regex === 'string') return compileRegex(raw.regex, `${where}.regex`);
  const safe = objectOf(raw.safe_regex);
  if (typeof safe.regex === 'string') return compileRegex(safe.regex, `${where}.safe_regex`);
  throw fault(where, 'string matcher needs one of exact, prefix, suffix, contains, regex, safe_regex');
}
