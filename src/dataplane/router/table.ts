/**
 * A `RouteConfiguration` compiled once for matching: its virtual hosts by domain and its
 * routes with their forwarding settings in data-plane units. Requests read it through
 * `lookup.ts`; what each message honours is in `route-fields.ts`.
 */
import type { Json, JsonObject } from '../../../events/config.js';
import type { Priority } from '../../../reducers/settings/cluster.js';
import { durationMs, listOf, numberOr, objectOf } from '../../../reducers/settings/values.js';
import { inlineBytes } from '../../bootstrap/data-source.js';
import { checkFields } from '../../bootstrap/honoured.js';
import { attempt, fault, type Report } from '../../bootstrap/report.js';
import { compileRegex, type StringTest } from '../../config/matchers.js';
import { compileCriteria, type MetadataCriteria } from '../../upstream/lb/criteria.js';
import { type HttpRequest, headerValue } from '../codec/request.js';
import { type CorsPolicy, compileCorsPolicy } from '../http/cors.js';
import type { CsrfPolicy } from '../http/csrf.js';
import {
  compileRouteRateLimits,
  compileVirtualHostRateLimits,
} from '../http/filters/ratelimit/route-policy.js';
import { compileFilterOverrides } from '../http/per-filter.js';
import { compileRouteIdleTimeout } from '../http/timeouts.js';
import { compileHashPolicy } from './hash.js';
import { checkHeaderValue, compileHeaderMutation, type HeaderMutation } from './header-mutation.js';
import { compileHeaderMatcher, compileQueryMatcher, type RequestTest } from './matchers.js';
import { compileMirrorPolicies, type MirrorPolicy } from './mirror.js';
import { compileRetryPolicy, type RetryPolicy } from './retry.js';
import {
  checkRouteFields,
  compileDecorator,
  compileFilterMetadata,
  ROUTE_CONFIG_FIELDS,
  VIRTUAL_HOST_FIELDS,
} from './route-fields.js';
import { compileUpgradeConfigs, type UpgradeTable } from './upgrade-config.js';

export interface WeightedTarget {
  name: string;
  weight: number;
  /** Its `metadata_match` merged over the route's, for subset balancing. */
  criteria: MetadataCriteria | null;
  /** This cluster's own header mutations, applied before the route's. */
  headers: HeaderMutation | null;
  /** This cluster's, the route's, its virtual host's and the table's mutations, in that order, none null. */
  mutations: HeaderMutation[];
}

export type RouteAction =
  | { kind: 'cluster'; cluster: string }
  | { kind: 'weighted'; clusters: WeightedTarget[]; totalWeight: number }
  | { kind: 'direct'; status: number; body: Buffer | null }
  | {
      kind: 'redirect';
      scheme: string | null;
      host: string | null;
      port: number;
      path: string | null;
      prefixRewrite: string | null;
      status: number;
      stripQuery: boolean;
    };

/** A route ready for matching, with its forwarding settings in data plane units. */
export interface CompiledRoute {
  name: string;
  matches(req: HttpRequest, pathNoQuery: string): boolean;
  /** Length of the matched prefix, for `prefix_rewrite`. */
  prefix: string | null;
  action: RouteAction;
  /** `metadata_match` (its `envoy.lb` / `proxy.lb` values), for subset balancing. */
  criteria: MetadataCriteria | null;
  prefixRewrite: string | null;
  hostRewrite: string | null;
  /** 0 disables the timeout. */
  timeoutMs: number;
  /** `idle_timeout`: replaces the HCM's `stream_idle_timeout` once routed (0 disables it); null keeps it. */
  idleTimeoutMs: number | null;
  retry: RetryPolicy | null;
  hash: ((req: HttpRequest) => bigint | null) | null;
  clusterNotFoundStatus: number;
  /** `priority`: which circuit-breaker thresholds of the cluster the request counts against. */
  priority: Priority;
  headers: HeaderMutation | null;
  /**
   * The mutations a request on this route applies, most specific first (route, virtual host,
   * table), none null; merged once by `compileRouteTable`, so a request allocates no list.
   */
  mutations: HeaderMutation[];
  /** `upgrade_configs` of the route: overrides the HCM's per upgrade type; null when it sets none. */
  upgrades: UpgradeTable | null;
  /** The route action's `cors` policy, for the CORS filter. */
  cors: CorsPolicy | null;
  /** The CSRF filter's policy from the route's `per_filter_config` / `typed_per_filter_config`. */
  csrf: CsrfPolicy | null;
  /** The per-request HTTP filters' overrides by config message (src/dataplane/http/filters/api.ts); null for none. */
  perFilter: ReadonlyMap<string, unknown> | null;
  /** Overrides keyed by a filter's `http_filters` name; null for none. */
  named: ReadonlyMap<string, unknown> | null;
  /** `decorator.operation`: the name of the request's tracing span; null for the default (the host). */
  operation: string | null;
  /** `request_mirror_policies`: the clusters that get a copy of the request; null for none. */
  mirrors: MirrorPolicy[] | null;
  metadata: JsonObject | null;
}

export interface CompiledVirtualHost {
  name: string;
  routes: CompiledRoute[];
  retry: RetryPolicy | null;
  headers: HeaderMutation | null;
  cors: CorsPolicy | null;
  csrf: CsrfPolicy | null;
  perFilter: ReadonlyMap<string, unknown> | null;
  named: ReadonlyMap<string, unknown> | null;
  metadata: JsonObject | null;
}

/**
 * A `RouteConfiguration` compiled once per config object: domain lookup tables (exact,
 * then `*.suffix` and `prefix.*` longest first, then `*`) and routes in order.
 */
export interface RouteTable {
  name: string;
  exact: Map<string, CompiledVirtualHost>;
  suffixes: Array<[string, CompiledVirtualHost]>;
  prefixes: Array<[string, CompiledVirtualHost]>;
  any: CompiledVirtualHost | null;
  headers: HeaderMutation | null;
  /** `internal_only_headers` (lowercase): removed from every request that is not internal (docs/edge.md). */
  internalOnlyHeaders: string[];
}

const REDIRECT_CODES: Record<string, number> = {
  MOVED_PERMANENTLY: 301,
  FOUND: 302,
  SEE_OTHER: 303,
  TEMPORARY_REDIRECT: 307,
  PERMANENT_REDIRECT: 308,
};

function compileDataSource(raw: Json | undefined, where: string): Buffer | null {
  const ds = objectOf(raw);
  const inline = inlineBytes(ds);
  if (inline !== undefined) return inline;
  if (ds.filename !== undefined)
    throw fault(
      `${where}.filename`,
      'direct_response bodies from files are not supported; inline the body',
      'unsupported',
    );
  return null;
}

const compileMetadataMatch = (o: JsonObject): JsonObject | null =>
  o.metadata_match === undefined ? null : objectOf(o.metadata_match);

function compileAction(route: JsonObject, where: string, report: Report): RouteAction {
  if (route.route !== undefined) {
    const action = objectOf(route.route);
    if (typeof action.cluster === 'string' && action.cluster)
      return { kind: 'cluster', cluster: action.cluster };
    if (action.weighted_clusters !== undefined) {
      const wc = objectOf(action.weighted_clusters);
      const clusters = listOf(wc.clusters).map((c, i) => {
        if (typeof c.name !== 'string' || !c.name)
          throw fault(
            `${where}.route.weighted_clusters.clusters[${i}].name`,
            'required field missing',
            'missing',
          );
        return {
          name: c.name,
          weight: numberOr(c.weight, 0),
          criteria: compileCriteria(compileMetadataMatch(action), compileMetadataMatch(c)),
          headers: compileHeaderMutation(c, `${where}.route.weighted_clusters.clusters[${i}]`, report),
          mutations: [],
        };
      });
      if (clusters.length === 0)
        throw fault(`${where}.route.weighted_clusters.clusters`, 'needs at least one cluster', 'missing');
      const sum = clusters.reduce((s, c) => s + c.weight, 0);
      // The v2 default: weights are percentages unless total_weight says otherwise.
      const totalWeight = numberOr(wc.total_weight, 100);
      if (sum !== totalWeight)
        throw fault(
          `${where}.route.weighted_clusters.total_weight`,
          `is ${totalWeight} but the cluster weights add up to ${sum}; make them equal`,
        );
      return { kind: 'weighted', clusters, totalWeight };
    }
    if (typeof action.cluster_header === 'string')
      throw fault(
        `${where}.route.cluster_header`,
        'is not implemented; name the cluster or use weighted_clusters',
        'unsupported',
      );
    throw fault(`${where}.route`, 'needs cluster or weighted_clusters', 'missing');
  }
  if (route.direct_response !== undefined) {
    const dr = objectOf(route.direct_response);
    const status = numberOr(dr.status, 0);
    if (status < 100 || status > 599)
      throw fault(`${where}.direct_response.status`, `${status} is not an HTTP status (100-599)`);
    return { kind: 'direct', status, body: compileDataSource(dr.body, `${where}.direct_response.body`) };
  }
  if (route.redirect !== undefined) {
    const r = objectOf(route.redirect);
    return {
      kind: 'redirect',
      scheme:
        r.https_redirect === true
          ? 'https'
          : headerText(r.scheme_redirect, `${where}.redirect.scheme_redirect`),
      host: headerText(r.host_redirect, `${where}.redirect.host_redirect`),
      port: numberOr(r.port_redirect, 0),
      path: headerText(r.path_redirect, `${where}.redirect.path_redirect`),
      prefixRewrite: headerText(r.prefix_rewrite, `${where}.redirect.prefix_rewrite`),
      status: REDIRECT_CODES[String(r.response_code ?? 'MOVED_PERMANENTLY')] ?? 301,
      stripQuery: r.strip_query === true,
    };
  }
  throw fault(where, 'a route needs one of route, redirect, direct_response', 'missing');
}

/**
 * A string the router writes into a request line or a header (`Location`, Host, a rewritten
 * path): null when unset; CR, LF or NUL refused, as the reference's validation does.
 */
function headerText(value: unknown, where: string): string | null {
  return typeof value === 'string' ? checkHeaderValue(value, where) : null;
}

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

function compileRoute(raw: JsonObject, where: string, report: Report): CompiledRoute {
  const match = objectOf(raw.match);
  const path = compilePathMatch(match, `${where}.match`);
  const headers: RequestTest[] = listOf(match.headers).map((h, i) =>
    compileHeaderMatcher(h, `${where}.match.headers[${i}]`),
  );
  if (match.grpc !== undefined) headers.push(isGrpc);
  const queries = listOf(match.query_parameters).map((q, i) =>
    compileQueryMatcher(q, `${where}.match.query_parameters[${i}]`),
  );
  const action = compileAction(raw, where, report);
  const ra = objectOf(raw.route);
  const overrides = compileFilterOverrides(raw, where, report);
  const test = path.test;
  return {
    name: typeof raw.name === 'string' ? raw.name : '',
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
    action,
    criteria: compileCriteria(compileMetadataMatch(ra)),
    prefixRewrite: headerText(ra.prefix_rewrite, `${where}.route.prefix_rewrite`),
    hostRewrite:
      headerText(ra.host_rewrite, `${where}.route.host_rewrite`) ??
      headerText(ra.host_rewrite_literal, `${where}.route.host_rewrite_literal`),
    timeoutMs: durationMs(ra.timeout, 15000),
    idleTimeoutMs: compileRouteIdleTimeout(ra.idle_timeout, `${where}.route.idle_timeout`, report),
    retry:
      ra.retry_policy === undefined
        ? null
        : compileRetryPolicy(objectOf(ra.retry_policy), `${where}.route.retry_policy`),
    hash: compileHashPolicy(listOf(ra.hash_policy)),
    clusterNotFoundStatus: ra.cluster_not_found_response_code === 'NOT_FOUND' ? 404 : 503,
    priority: ra.priority === 'HIGH' ? 'HIGH' : 'DEFAULT',
    headers: compileHeaderMutation(raw, where, report),
    mutations: [],
    upgrades:
      ra.upgrade_configs === undefined
        ? null
        : compileUpgradeConfigs(ra.upgrade_configs, `${where}.route.upgrade_configs`, report),
    ...overrides,
    cors:
      overrides.cors ??
      (ra.cors === undefined ? null : compileCorsPolicy(objectOf(ra.cors), `${where}.route.cors`, report)),
    perFilter: compileRouteRateLimits(overrides.perFilter, ra, `${where}.route`, report),
    operation:
      raw.decorator === undefined
        ? null
        : compileDecorator(objectOf(raw.decorator), `${where}.decorator`, report),
    mirrors: compileMirrorPolicies(ra, `${where}.route`, report),
    metadata: compileFilterMetadata(raw),
  };
}

/**
 * Compiles a `RouteConfiguration`. Every problem becomes a finding in `report` with its
 * field path (one per bad route or virtual host, the rest still checked); the table holds
 * what compiled, and is only served when the report has no errors.
 */
export function compileRouteTable(raw: JsonObject, where: string, report: Report): RouteTable {
  const table: RouteTable = {
    name: typeof raw.name === 'string' ? raw.name : '',
    exact: new Map(),
    suffixes: [],
    prefixes: [],
    any: null,
    headers: attempt(report, where, () => compileHeaderMutation(raw, where, report)) ?? null,
    internalOnlyHeaders: (Array.isArray(raw.internal_only_headers) ? raw.internal_only_headers : []).map(
      (h) => String(h).toLowerCase(),
    ),
  };
  checkFields(raw, where, report, ROUTE_CONFIG_FIELDS, 'RouteConfiguration');
  listOf(raw.virtual_hosts).forEach((vhRaw, v) => {
    const at = `${where}.virtual_hosts[${v}]`;
    checkFields(vhRaw, at, report, VIRTUAL_HOST_FIELDS, 'VirtualHost');
    const vhOverrides = compileFilterOverrides(vhRaw, at, report);
    const vh: CompiledVirtualHost = {
      name: typeof vhRaw.name === 'string' ? vhRaw.name : '',
      routes: [],
      retry:
        vhRaw.retry_policy === undefined
          ? null
          : (attempt(report, `${at}.retry_policy`, () =>
              compileRetryPolicy(objectOf(vhRaw.retry_policy), `${at}.retry_policy`),
            ) ?? null),
      headers: attempt(report, at, () => compileHeaderMutation(vhRaw, at, report)) ?? null,
      ...vhOverrides,
      cors:
        vhOverrides.cors ??
        (vhRaw.cors === undefined ? null : compileCorsPolicy(objectOf(vhRaw.cors), `${at}.cors`, report)),
      perFilter: compileVirtualHostRateLimits(vhOverrides.perFilter, vhRaw, at, report),
      metadata: compileFilterMetadata(vhRaw),
    };
    listOf(vhRaw.routes).forEach((r, i) => {
      const routeAt = `${at}.routes[${i}]`;
      checkRouteFields(r, routeAt, report);
      const route = attempt(report, routeAt, () => compileRoute(r, routeAt, report));
      if (!route) return;
      route.mutations = present([route.headers, vh.headers, table.headers]);
      if (route.action.kind === 'weighted')
        for (const target of route.action.clusters)
          target.mutations = present([target.headers, ...route.mutations]);
      vh.routes.push(route);
    });
    const domains = Array.isArray(vhRaw.domains) ? vhRaw.domains : [];
    if (domains.length === 0) report.error(`${at}.domains`, 'needs at least one domain', 'missing');
    for (const d of domains) {
      const domain = String(d).toLowerCase();
      const dup = () => report.error(`${at}.domains`, `'${domain}' is already used by another virtual host`);
      if (domain === '*') {
        if (table.any) dup();
        else table.any = vh;
      } else if (domain.startsWith('*')) table.suffixes.push([domain.slice(1), vh]);
      else if (domain.endsWith('*')) table.prefixes.push([domain.slice(0, -1), vh]);
      else if (table.exact.has(domain)) dup();
      else table.exact.set(domain, vh);
    }
  });
  table.suffixes.sort((a, b) => b[0].length - a[0].length);
  table.prefixes.sort((a, b) => b[0].length - a[0].length);
  return table;
}

function present(levels: Array<HeaderMutation | null>): HeaderMutation[] {
  return levels.filter((level): level is HeaderMutation => level !== null);
}
