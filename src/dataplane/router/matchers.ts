import type { RE2 } from 're2-wasm';
import type { Json, JsonObject } from '../../../events/config.js';
import { objectOf } from '../../../reducers/settings/values.js';
import { fault } from '../../bootstrap/report.js';
import { fullMatchRe2 } from '../../re2.js';
import { type HttpRequest, headerValue } from '../codec/request.js';

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

/** A compiled `route.HeaderMatcher`. */
export type RequestTest = (req: HttpRequest) => boolean;

/**
 * `HeaderMatcher`: exact_match, safe_regex_match, regex_match, range_match, present_match,
 * prefix_match, suffix_match, invert_match. A matcher with no specifier matches when the
 * header is present, as the reference does.
 */
export function compileHeaderMatcher(raw: JsonObject, where: string): RequestTest {
  const name = typeof raw.name === 'string' ? raw.name.toLowerCase() : '';
  if (!name) throw fault(`${where}.name`, 'a header matcher needs a header name', 'missing');
  const invert = raw.invert_match === true;
  let test: (value: string | undefined) => boolean;
  if (typeof raw.exact_match === 'string') {
    const want = raw.exact_match;
    test = (v) => v === want;
  } else if (typeof raw.prefix_match === 'string') {
    const want = raw.prefix_match;
    test = (v) => v?.startsWith(want) === true;
  } else if (typeof raw.suffix_match === 'string') {
    const want = raw.suffix_match;
    test = (v) => v?.endsWith(want) === true;
  } else if (typeof raw.regex_match === 'string' || raw.safe_regex_match !== undefined) {
    const pattern =
      typeof raw.regex_match === 'string'
        ? raw.regex_match
        : String(objectOf(raw.safe_regex_match).regex ?? '');
    const re = compileRegex(pattern, `${where}.safe_regex_match`);
    test = (v) => v !== undefined && re(v);
  } else if (raw.range_match !== undefined) {
    const range = objectOf(raw.range_match);
    const start = Number(range.start ?? 0);
    const end = Number(range.end ?? 0);
    test = (v) => {
      if (v === undefined || !/^-?\d+$/.test(v)) return false;
      const n = Number(v);
      return n >= start && n < end;
    };
  } else if (raw.present_match !== undefined) {
    const want = raw.present_match !== false;
    test = (v) => (v !== undefined) === want;
  } else {
    test = (v) => v !== undefined;
  }
  return (req) => test(headerValue(req, name)) !== invert;
}

/** `QueryParameterMatcher`: string_match, present_match, or the deprecated value/regex pair. */
export function compileQueryMatcher(raw: JsonObject, where: string): (query: URLSearchParams) => boolean {
  const name = typeof raw.name === 'string' ? raw.name : '';
  if (!name) throw fault(`${where}.name`, 'a query parameter matcher needs a name', 'missing');
  if (raw.present_match === true) return (q) => q.has(name);
  if (raw.string_match !== undefined) {
    const test = compileStringMatcher(objectOf(raw.string_match), `${where}.string_match`);
    return (q) => {
      const v = q.get(name);
      return v !== null && test(v);
    };
  }
  if (typeof raw.value === 'string') {
    const value = raw.value;
    const test = raw.regex === true ? compileRegex(value, `${where}.value`) : (v: string) => v === value;
    return (q) => {
      const v = q.get(name);
      return v !== null && test(v);
    };
  }
  return (q) => q.has(name);
}

/** Arrays of JSON objects from a repeated field, tolerating absence. */
export function listOf(value: Json | undefined): JsonObject[] {
  return Array.isArray(value) ? value.map((v) => objectOf(v)) : [];
}
