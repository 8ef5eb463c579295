/**
 * The matchers that test a request (headers, query parameters); the string matchers they use
 * are config compile and live below the data plane (src/config/matchers.ts).
 */
import type { JsonObject } from '../../../events/config.js';
import { objectOf } from '../../../reducers/settings/values.js';
import { fault } from '../../bootstrap/report.js';
import { compileRegex, compileStringMatcher } from '../../config/matchers.js';
import { type HttpRequest, headerValue } from '../codec/request.js';

/** A compiled `route.HeaderMatcher`. */
export type RequestTest = (req: HttpRequest) => boolean;

/**
 * `HeaderMatcher`: exact_match, safe_regex_match, regex_match, range_match, present_match,
 * prefix_match, suffix_match, v3's string_match, invert_match. A matcher with no specifier matches when the
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
  } else if (raw.string_match !== undefined) {
    // v3's spelling of every string match (exact, prefix, suffix, contains, safe_regex, ignore_case).
    const match = compileStringMatcher(objectOf(raw.string_match), `${where}.string_match`);
    test = (v) => v !== undefined && match(v);
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
