/**
 * A `RouteConfiguration` compiled once for matching: its virtual hosts by domain and its
 * routes with their forwarding settings in data-plane units. Requests read it through
 * `lookup.ts`; a route's `match` compiles in `route-match.ts`, its action in
 * `route-action.ts`; what each message honours is in `route-fields.ts`.
 */
import type { JsonObject } from '../../../events/config.js';
import type { Priority } from '../../../reducers/settings/cluster.js';
import { durationMs, listOf, objectOf } from '../../../reducers/settings/values.js';
import { checkFields } from '../../bootstrap/honoured.js';
import { attempt, type Report } from '../../bootstrap/report.js';
import { compileCriteria, type MetadataCriteria } from '../../upstream/lb/criteria.js';
import type { HttpRequest } from '../codec/request.js';
import { type CorsPolicy, compileCorsPolicy } from '../http/cors.js';
import type { CsrfPolicy } from '../http/csrf.js';
import {
  compileRouteRateLimits,
  compileVirtualHostRateLimits,
} from '../http/filters/ratelimit/route-policy.js';
import { compileFilterOverrides } from '../http/per-filter.js';
import { compileRouteIdleTimeout } from '../http/timeouts.js';
import { compileHashPolicy } from './hash.js';
import { compileHeaderMutation, type HeaderMutation, headerText } from './header-mutation.js';
import { compileMirrorPolicies, type MirrorPolicy } from './mirror.js';
import { compileRetryPolicy, type RetryPolicy } from './retry.js';
import { compileMetadataMatch, compileRouteAction, type RouteAction } from './route-action.js';
import {
  checkRouteFields,
  compileDecorator,
  compileFilterMetadata,
  ROUTE_CONFIG_FIELDS,
  VIRTUAL_HOST_FIELDS,
} from './route-fields.js';
import { compileRouteMatch } from './route-match.js';
import { compileUpgradeConfigs, type UpgradeTable } from './upgrade-config.js';

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

function compileRoute(raw: JsonObject, where: string, report: Report): CompiledRoute {
  const { matches, prefix } = compileRouteMatch(objectOf(raw.match), `${where}.match`);
  const action = compileRouteAction(raw, where, report);
  const ra = objectOf(raw.route);
  const overrides = compileFilterOverrides(raw, where, report);
  return {
    name: typeof raw.name === 'string' ? raw.name : '',
    prefix,
    matches,
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
