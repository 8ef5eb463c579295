import { ORIGINAL_DST_HEADERS } from '../../../../upstream/lb/original-dst.js';
import { FLAG, type StreamInfo } from '../../../access-log/stream-info.js';
import { type HttpRequest, headerValue } from '../../../codec/request.js';
import { applyHeaderMutations } from '../../../router/header-mutation.js';
import { findRoute, pickWeighted, redirectLocation } from '../../../router/lookup.js';
import { readRequestControls, strictCheckFailure } from '../../../router/request-controls.js';
import type { WeightedTarget } from '../../../router/route-action.js';
import type { CompiledRoute, CompiledVirtualHost } from '../../../router/table.js';
import type { DownstreamOwner } from '../../downstream.js';
import { EDGE_ROUTER_HEADERS } from '../../edge.js';
import { upstreamRequestHead } from '../../headers.js';
import type { ChainRouter } from '../chain-ends.js';
import { Shadows } from './shadow.js';
import { type AttemptStream, UpstreamAttempt } from './upstream-attempt.js';

/** A route the table matched, with its virtual host. */
export interface RouteHit {
  vh: CompiledVirtualHost;
  route: CompiledRoute;
}

/** What the router filter needs of its stream beyond what an attempt needs. */
export interface RouterStream extends AttemptStream {
  readonly hcm: DownstreamOwner;
  /** What the edge step found (`EDGE_*` bits of src/dataplane/http/edge.ts). */
  readonly edge: number;
  /** The request has a route: the stream records it and takes the route's `idle_timeout`. */
  routed(route: CompiledRoute): void;
}

/** The router's own request header (unless `suppress_envoy_headers`), spelled as this proxy spells it. */
const EXPECTED_TIMEOUT_HEADER = 'x-proxy-expected-rq-timeout-ms';

/** The destination an ORIGINAL_DST request names in its header (either spelling), or null. */
function originalDestination(req: HttpRequest): string | null {
  for (const name of ORIGINAL_DST_HEADERS) {
    const value = headerValue(req, name);
    if (value !== undefined) return value.trim();
  }
  return null;
}

/**
 * A filter's override on the route, else its virtual host: at each level the one keyed by the
 * filter's `http_filters` name (when it reads them so), else the one keyed by its extension.
 */
export function overrideOf(hit: RouteHit | null, configType: string, name?: string): unknown {
  if (hit === null) return undefined;
  const { route, vh } = hit;
  return (
    (name === undefined ? undefined : route.named?.get(name)) ??
    route.perFilter?.get(configType) ??
    (name === undefined ? undefined : vh.named?.get(name)) ??
    vh.perFilter?.get(configType)
  );
}

/**
 * The router filter of one request, last in the chain: it holds the route the table matched
 * (which the filters before it read, and may make it look up again), decides once every filter
 * passed the request, and owns the upstream attempt that follows.
 */
export class RouterFilter implements ChainRouter {
  /** The route the table matched for the request as it is now; null for none. */
  hit: RouteHit | null = null;
  /** The route the router took (for the span); null before it ran, or without one. */
  route: CompiledRoute | null = null;
  /** The way upstream; null before the router has a cluster, or without one. */
  attempt: UpstreamAttempt | null = null;
  /** The copies the route's mirror policies send; null for none. */
  private shadows: Shadows | null = null;

  constructor(private readonly stream: RouterStream) {}

  get routeCluster(): string | null {
    const action = this.hit?.route.action;
    return action?.kind === 'cluster' ? action.cluster : null;
  }

  perRoute(configType: string, name?: string): unknown {
    return overrideOf(this.hit, configType, name);
  }

  clearRouteCache(): void {
    this.hit = findRoute(this.stream.hcm.routes, this.stream.req);
  }

  decodeHeaders(): void {
    this.route = this.hit?.route ?? null;
    const attempt = routeRequest(this.stream, this.hit);
    if (attempt === null) return;
    this.attempt = attempt;
    const mirrors = attempt.route.mirrors;
    if (mirrors !== null && attempt.head !== null)
      this.shadows = Shadows.start(this.stream, attempt.route, mirrors, attempt.head, attempt.timeoutMs);
    attempt.begin();
  }

  decodeData(chunk: Buffer, end: boolean): void {
    const attempt = this.attempt;
    if (attempt === null) return;
    if (chunk.length > 0) {
      this.shadows?.data(chunk);
      attempt.data(chunk);
    }
    if (end) {
      this.shadows?.end(this.stream);
      attempt.end(undefined);
    }
  }

  decodeTrailers(trailers: string[]): void {
    this.shadows?.end(this.stream);
    this.attempt?.end(trailers);
  }
}

/**
 * The router's decision on a request every filter before it passed: the route's
 * direct response or redirect, else its cluster, the retry policy and timeouts (the route's,
 * or an internal caller's control headers) and the upstream request head. Answers the request
 * itself and returns null, or returns the attempt for the stream to begin.
 */
function routeRequest(stream: RouterStream, hit: RouteHit | null): UpstreamAttempt | null {
  const hcm = stream.hcm;
  const info = stream.info;
  if (!hit) {
    info.flags |= FLAG.NR;
    info.details = 'route_not_found';
    hcm.stats.noRoute.inc();
    stream.reply(404, '');
    return null;
  }
  const route = hit.route;
  stream.routed(route);
  const action = route.action;
  if (action.kind === 'direct') {
    hcm.stats.rqDirectResponse.inc();
    info.details = 'direct_response';
    stream.reply(action.status, action.body ?? '', responseHeaders(action.status, [], route, info));
    return null;
  }
  if (action.kind === 'redirect') {
    hcm.stats.rqRedirect.inc();
    info.details = 'direct_response';
    const location = ['location', redirectLocation(action, route, stream.req)];
    stream.reply(action.status, '', responseHeaders(action.status, location, route, info));
    return null;
  }
  let target: WeightedTarget | null = null;
  let clusterName: string;
  if (action.kind === 'weighted') {
    target = pickWeighted(action, Math.random());
    clusterName = target.name;
  } else {
    clusterName = action.cluster;
  }
  hcm.stats.routerRqTotal.inc();
  const cluster = hcm.deps.clusters.get(clusterName);
  if (!cluster) {
    info.flags |= FLAG.NR;
    info.details = 'cluster_not_found';
    hcm.stats.noCluster.inc();
    stream.reply(route.clusterNotFoundStatus, '');
    return null;
  }
  info.upstreamCluster = clusterName;
  const router = hcm.filters.router;
  const attempt = new UpstreamAttempt(stream, route, cluster, router);
  if (target !== null) {
    attempt.criteria = target.criteria;
    attempt.mutations = target.mutations;
  } else {
    attempt.criteria = route.criteria;
  }
  return planned(stream, hit, attempt) ? attempt : null;
}

/** A direct response's or redirect's headers, with the route's response mutations (in place). */
function responseHeaders(
  status: number,
  headers: string[],
  route: CompiledRoute,
  info: StreamInfo,
): string[] {
  info.responseCode = status;
  if (route.mutations.length > 0) applyHeaderMutations(headers, route.mutations, true, { info, host: null });
  return headers;
}

/**
 * Fills in the attempt's policy, timeouts and head; false when the request's control headers
 * were refused (answered 400).
 */
function planned(stream: RouterStream, hit: RouteHit, attempt: UpstreamAttempt): boolean {
  const req = stream.req;
  const route = hit.route;
  const router = stream.hcm.filters.router;
  let retry = route.retry ?? hit.vh.retry;
  let timeoutMs = route.timeoutMs;
  let perTryMs = retry?.perTryTimeoutMs ?? 0;
  if (stream.edge & EDGE_ROUTER_HEADERS) {
    const bad =
      router.strictCheckHeaders.length === 0
        ? null
        : strictCheckFailure(req.headers, router.strictCheckHeaders);
    if (bad !== null) {
      stream.info.flags |= FLAG.IH;
      stream.reply(400, `invalid header '${bad[0]}' with value '${bad[1]}'`);
      return false;
    }
    const controls = readRequestControls(req.headers, retry, route.timeoutMs, router);
    retry = controls.retry;
    timeoutMs = controls.timeoutMs;
    perTryMs = controls.perTryMs;
    attempt.timeoutStatus = controls.timeoutStatus;
  }
  attempt.retry = retry;
  attempt.timeoutMs = timeoutMs;
  // As the reference: a per-try timeout not below the whole request's is none.
  attempt.perTryMs = timeoutMs !== 0 && perTryMs >= timeoutMs ? 0 : perTryMs;
  attempt.hash = route.hash ? route.hash(req) : null;
  // The header first where the cluster reads it, then the connection's restored destination.
  attempt.originalDst =
    (attempt.cluster.settings.useOriginalDstHeader ? originalDestination(req) : null) ??
    req.originalDst ??
    null;
  const head = upstreamRequestHead(req, route, stream.hcm);
  if (!router.suppressEnvoyHeaders) {
    // What the upstream has to answer in: the per-try timeout, else the whole request's.
    const expected = attempt.perTryMs || timeoutMs;
    if (expected > 0) head.headers.push(EXPECTED_TIMEOUT_HEADER, String(expected));
  }
  if (req.acceptsTrailers === true && req.hasBody) head.trailers = true;
  attempt.head = head;
  return true;
}
