import { FLAG, type StreamInfo } from '../access-log/stream-info.js';
import { type HttpRequest, headerValue } from '../codec/request.js';
import type { State } from '../../../reducers/index.js';
import type { DownstreamOwner } from './downstream.js';
import { underscoreHeaders } from './edge.js';
import { isGrpcContentType } from './grpc.js';
import { normalizeRequestPath } from './path-normalize.js';

/** The proxy's own answer to a request head, given before any filter. */
export interface HeadAnswer {
  status: number;
  body: string;
  headers?: string[];
}

const UPGRADE_REQUIRED: HeadAnswer = { status: 426, body: '' };
const MISSING_HOST: HeadAnswer = { status: 400, body: 'missing host' };
const NOT_RELATIVE: HeadAnswer = { status: 404, body: '' };
const INVALID_PATH: HeadAnswer = { status: 400, body: 'invalid path' };
const UNDERSCORES: HeadAnswer = { status: 400, body: 'Bad Request' };
const OVERLOADED: HeadAnswer = { status: 503, body: 'proxy overloaded' };
const HEALTH_FAILING: HeadAnswer = {
  status: 503,
  body: '',
  headers: ['x-proxy-immediate-health-check-fail', 'true'],
};
const HEALTHY: HeadAnswer = { status: 200, body: '' };

/**
 * What the connection manager makes of a request head before anything reads it, in the
 * reference's order: the HTTP version (HTTP/1.0 only with `accept_http_10`, its Host from
 * `default_host_for_http_10`), a path that is not relative (404) or has a fragment (400), the path normalized (a route
 * denying /admin sees /public/../admin as /admin), and headers with underscores dropped or
 * refused (`headers_with_underscores_action`).
 */
export function checkHead(hcm: DownstreamOwner, req: HttpRequest): HeadAnswer | null {
  if (req.protocol === 'HTTP/1.0') {
    const http1 = hcm.spec.http1;
    if (!http1.acceptHttp10) return UPGRADE_REQUIRED;
    if (!req.authority) req.authority = http1.defaultHostForHttp10;
    if (!req.authority) return MISSING_HOST;
  }
  if (req.path.charCodeAt(0) !== 47 /* / */) {
    hcm.stats.rqNonRelativePath.inc();
    return NOT_RELATIVE;
  }
  // A fragment is never part of a request target (RFC 9112 3.2): `/admin#x` would pass a
  // route denying `/admin` and reach an origin that drops it (the reference's CVE-2021-32779).
  if (req.path.includes('#')) return INVALID_PATH;
  const verdict = normalizeRequestPath(req, hcm.normalizePath, hcm.spec.mergeSlashes, hcm.spec.escapedSlashes);
  if (verdict === 'invalid') return INVALID_PATH;
  if (verdict === 'redirect') {
    // As the reference: a gRPC client cannot follow a redirect, so it gets the 400.
    if (isGrpcContentType(headerValue(req, 'content-type'))) return INVALID_PATH;
    hcm.stats.rqRedirectedNormalizedPath.inc();
    return { status: 307, body: '', headers: ['location', req.path] };
  }
  const action = hcm.spec.underscores;
  const dropped = action === 'ALLOW' ? 0 : underscoreHeaders(req.headers, action);
  if (dropped < 0) {
    hcm.stats.rqRejectedUnderscores.inc();
    return UNDERSCORES;
  }
  if (dropped > 0) hcm.stats.droppedUnderscores.add(dropped);
  return null;
}

/** The overload actions active for `hcm`'s requests: none on a listener with `bypass_overload_manager`. */
export function overloadOf(hcm: DownstreamOwner): State['server']['overload'] {
  return hcm.deps.bypassOverload ? undefined : hcm.deps.ctx.store.state.server.overload;
}

/**
 * The answers given before the filter chain: the overload manager's `stop_accepting_requests`
 * (before any filter, health checks too, and never sent upstream, as the reference), then the
 * `health_check` filter's for a request it matches (unless it passes them through).
 */
export function answerBeforeFilters(
  hcm: DownstreamOwner,
  req: HttpRequest,
  info: StreamInfo,
): HeadAnswer | null {
  const server = hcm.deps.ctx.store.state.server;
  if (overloadOf(hcm)?.stop_accepting_requests) {
    hcm.stats.rqOverloadClose.inc();
    info.details = 'overload';
    return OVERLOADED;
  }
  const hc = hcm.filters.healthCheck;
  if (hc === null || !hc.matches.every((m) => m(req))) return null;
  info.healthCheck = true;
  if (server.healthCheckFailed) {
    info.flags |= FLAG.LH;
    return HEALTH_FAILING;
  }
  return hc.passThrough ? null : HEALTHY;
}
