/**
 * A route's `match` compiled into one test of a request: its path (`prefix`, `path` or a
 * regex), then its `headers`, `grpc` and `query_parameters`, all of which must hold.
 */
import type { JsonObject } from '../../../events/config.js';
import { listOf, objectOf } from '../../../reducers/settings/values.js';
import { fault } from '../../bootstrap/report.js';
import { compileRegex, type StringTest } from '../../config/matchers.js';
import { type HttpRequest, headerValue } from '../codec/request.js';
import { compileHeaderMatcher, compileQueryMatcher, type RequestTest } from './matchers.js';

/** The path part of a `RouteMatch`: `prefix`, `path` or a regex, folded when not `case_sensitive`. */
function compilePathMatch(
  match: JsonObject,
  where: string,
): { test: (req: HttpRequest, p: string) => boolean; prefix: string | null } {
  const caseSensitive = match.case_sensitive !== false;
  const fold = (s: string) => (caseSensitive ? s : s.toLowerCase());
  if (typeof match.prefix === 'string') {
    const prefix = fold(match.prefix);
    return { test: (req) => fold(req.path).startsWith(prefix), prefix: match.prefix };
  }
  if (typeof match.path === 'string') {
    const path = fold(match.path);
    return { test: (_req, p) => fold(p) === path, prefix: match.path };
  }
  if (match.safe_regex !== undefined || typeof match.regex === 'string') {
    const pattern =
      typeof match.regex === 'string' ? match.regex : String(objectOf(match.safe_regex).regex ?? '');
    const re: StringTest = compileRegex(pattern, `${where}.safe_regex`);
    return { test: (_req, p) => re(p), prefix: null };
  }
  throw fault(where, 'a route match needs one of prefix, path, safe_regex', 'missing');
}

/**
 * `grpc: {}`: a content-type of application/grpc, alone or followed by `+` or `;`, as the
 * reference checks it.
 */
function isGrpc(req: HttpRequest): boolean {
  const type = headerValue(req, 'content-type') ?? '';
  const base = 'application/grpc';
  const next = type.charAt(base.length);
  return type.startsWith(base) && (next === '' || next === '+' || next === ';');
}

/** A compiled `RouteMatch`; `prefix` is the matched prefix (or path) that `prefix_rewrite` replaces. */
export interface RouteMatch {
  matches(req: HttpRequest, pathNoQuery: string): boolean;
  prefix: string | null;
}

export function compileRouteMatch(match: JsonObject, where: string): RouteMatch {
  const path = compilePathMatch(match, where);
  const headers: RequestTest[] = listOf(match.headers).map((h, i) =>
    compileHeaderMatcher(h, `${where}.headers[${i}]`),
  );
  if (match.grpc !== undefined) headers.push(isGrpc);
  const queries = listOf(match.query_parameters).map((q, i) =>
    compileQueryMatcher(q, `${where}.query_parameters[${i}]`),
  );
  const test = path.test;
  return {
    prefix: path.prefix,
    matches(req, pathNoQuery) {
      if (!test(req, pathNoQuery)) return false;
      for (const h of headers) if (!h(req)) return false;
      if (queries.length > 0) {
        const q = req.path.indexOf('?');
        const params = new URLSearchParams(q < 0 ? '' : req.path.slice(q + 1));
        for (const t of queries) if (!t(params)) return false;
      }
      return true;
    },
  };
}
