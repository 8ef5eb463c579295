import type { JsonObject } from '../../../events/config.js';
import { objectOf } from '../../../reducers/settings/values.js';
import { CONFIG_TYPE, configTypeOf, extensionForType } from '../../bootstrap/extensions.js';
import type { FieldTable } from '../../bootstrap/honoured.js';
import type { Report } from '../../bootstrap/report.js';
import type { AccessLogSpec } from '../access-log/config.js';
import type { RequestTest } from '../router/matchers.js';
import type { CsrfPolicy } from './csrf.js';
import type { StreamFilterSpec } from './filters/api.js';
import { HTTP_FILTER_FACTORIES, httpFilterFactory } from './filters/registry.js';
import type { GrpcFilterKind } from './grpc-filters.js';
import { FIELD_TABLES as FRACTION_FIELD_TABLES } from './runtime-fraction.js';

/** The `health_check` HTTP filter: which requests it answers, and whether it passes them on. */
export interface HealthCheckFilter {
  passThrough: boolean;
  matches: RequestTest[];
}

/** A filter that reads the routing decision (src/dataplane/http/route-filters.ts), in chain order. */
export type RouteFilterSpec = { kind: 'cors' } | { kind: 'csrf'; policy: CsrfPolicy };

/**
 * The HTTP filter chain this data plane runs: an optional health check, the gRPC filters,
 * the CORS and CSRF filters in their order, then the router.
 */
export interface FilterChain {
  healthCheck: HealthCheckFilter | null;
  routeFilters: RouteFilterSpec[];
  /**
   * The router's `upstream_log`: one line per request that went upstream, describing its
   * last attempt (the reference writes one per attempt).
   */
  upstreamLogs: AccessLogSpec[];
  /** The router's `suppress_envoy_headers` and `respect_expected_rq_timeout` (docs/edge.md). */
  router: RouterOptions;
  /** The tap filter's admin config id (`POST /tap` attaches sessions to it), or null without one. */
  tapConfigId: string | null;
  /** `grpc_http1_bridge` and `grpc_web` in chain order (src/dataplane/http/grpc-filters.ts). */
  grpc: GrpcFilterKind[];
  /** The filters that run per request through src/dataplane/http/filters/api.ts, in chain order. */
  stream: StreamFilterSpec[];
}

/** What the router adds to requests and responses, and which caller timeout it believes. */
export interface RouterOptions {
  /** No `x-proxy-expected-rq-timeout-ms` upstream, no `x-proxy-upstream-service-time` or `x-proxy-overloaded` downstream. */
  suppressEnvoyHeaders: boolean;
  /** An internal caller's `x-proxy-expected-rq-timeout-ms` (set by the proxy in front) is the request's timeout. */
  respectExpectedRqTimeout: boolean;
  /** `strict_check_headers`, as suffixes (`retry-on`, ...): a malformed one answers 400. */
  strictCheckHeaders: string[];
}

/** The router's name as the registry spells it, for the message that asks for it. */
const ROUTER_NAME = extensionForType('envoy.filters.http', CONFIG_TYPE.router)?.name ?? CONFIG_TYPE.router;

/** The field tables of this compile step, by the message name its findings use (docs/bootstrap.md lists them). */
export const FIELD_TABLES: Record<string, FieldTable> = {
  ...Object.assign({}, ...HTTP_FILTER_FACTORIES.map((f) => f.fieldTables)),
  ...FRACTION_FIELD_TABLES,
};

/**
 * Compiles `http_filters`, each picked by its resolved `typed_config` `@type` (the loader
 * resolved every spelling of its name through the extension registry). The router must come
 * last: filters after it would never run. An empty list is the router alone.
 */
export function compileHttpFilters(list: JsonObject[], where: string, report: Report): FilterChain {
  const chain: FilterChain = {
    healthCheck: null,
    routeFilters: [],
    upstreamLogs: [],
    router: { suppressEnvoyHeaders: false, respectExpectedRqTimeout: false, strictCheckHeaders: [] },
    tapConfigId: null,
    grpc: [],
    stream: [],
  };
  list.forEach((f, i) => {
    const at = `${where}[${i}]`;
    const type = configTypeOf(f);
    // An unresolved name was reported by the loader, which resolves every extension.
    if (type === '') return;
    const factory = httpFilterFactory(type);
    if (factory === undefined) {
      report.error(
        `${at}.name`,
        `'${String(f.name ?? type)}' is not an HTTP filter of this build`,
        'unknown',
      );
      return;
    }
    const path = `${at}.typed_config`;
    const config = factory.compile(objectOf(f.typed_config), path, report);
    if (factory.install) factory.install(chain, config, at, report);
    else chain.stream.push({ configType: type, config });
  });
  // An empty list routes (as before the filter list existed); a non-empty one must say so.
  if (list.length > 0 && configTypeOf(list[list.length - 1] ?? {}) !== CONFIG_TYPE.router)
    report.error(where, `the HTTP filter chain needs the router filter (${ROUTER_NAME}) last`, 'missing');
  return chain;
}
