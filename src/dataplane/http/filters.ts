import type { JsonObject } from '../../../events/config.js';
import { objectOf } from '../../../reducers/settings/values.js';
import { CONFIG_TYPE, configTypeOf, extensionForType } from '../../bootstrap/extensions.js';
import { acting, checkFields, type FieldTable } from '../../bootstrap/honoured.js';
import { attempt, type Report } from '../../bootstrap/report.js';
import { type AccessLogSpec, compileAccessLogs } from '../access-log/config.js';
import { compileHeaderMatcher, listOf, type RequestTest } from '../router/matchers.js';
import { STRICT_CHECKABLE } from '../router/request-controls.js';
import { FIELD_TABLES as CSRF_FIELD_TABLES, type CsrfPolicy, compileCsrfPolicy } from './csrf.js';
import type { GrpcFilterKind } from './grpc-filters.js';
import { FIELD_TABLES as FRACTION_FIELD_TABLES } from './runtime-fraction.js';
import { compileTapFilter, TAP_FIELD_TABLES } from './tap.js';

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

const ROUTER_FIELDS: FieldTable = {
  // Stats this build does not keep either way; both are hints to the reference's stats code.
  dynamic_stats: 'advise',
  start_child_span: 'advise',
  ...acting('upstream_log', 'suppress_envoy_headers', 'respect_expected_rq_timeout', 'strict_check_headers'),
};
const HEALTH_CHECK_FIELDS: FieldTable = acting('pass_through_mode', 'headers');

/** The router's name as the registry spells it, for the message that asks for it. */
const ROUTER_NAME = extensionForType('envoy.filters.http', CONFIG_TYPE.router)?.name ?? CONFIG_TYPE.router;

/** The field tables of this compile step, by the message name its findings use (docs/bootstrap.md lists them). */
export const FIELD_TABLES = {
  Router: ROUTER_FIELDS,
  HealthCheck: HEALTH_CHECK_FIELDS,
  ...TAP_FIELD_TABLES,
  // The CORS filter's own message has no fields: its policy is on routes and virtual hosts.
  Cors: {},
  ...CSRF_FIELD_TABLES,
  // Neither gRPC filter's v2 message has fields.
  Config: {},
  GrpcWeb: {},
  ...FRACTION_FIELD_TABLES,
};

/** `strict_check_headers`: each one of the reference's five checkable headers, in either spelling. */
function compileStrictCheckHeaders(raw: unknown, path: string, report: Report): string[] {
  const names = Array.isArray(raw) ? raw : [];
  return names.flatMap((n, i) => {
    const name = String(n).toLowerCase();
    const suffix = name.startsWith('x-envoy-') || name.startsWith('x-proxy-') ? name.slice(8) : '';
    if ((STRICT_CHECKABLE as readonly string[]).includes(suffix)) return [suffix];
    report.error(
      `${path}.strict_check_headers[${i}]`,
      `'${String(n)}' cannot be strictly checked (known: ${STRICT_CHECKABLE.map((s) => `x-envoy-${s}`).join(', ')})`,
    );
    return [];
  });
}

/**
 * Compiles `http_filters`, each picked by its resolved `typed_config` `@type` (the loader
 * resolved every spelling of its name through the extension registry). The router must come
 * last: filters after it would never run. An empty list is the router alone.
 */
export function compileHttpFilters(list: JsonObject[], where: string, report: Report): FilterChain {
  let healthCheck: HealthCheckFilter | null = null;
  const routeFilters: RouteFilterSpec[] = [];
  let upstreamLogs: AccessLogSpec[] = [];
  let router: RouterOptions = {
    suppressEnvoyHeaders: false,
    respectExpectedRqTimeout: false,
    strictCheckHeaders: [],
  };
  let tapConfigId: string | null = null;
  const grpc: GrpcFilterKind[] = [];
  list.forEach((f, i) => {
    const at = `${where}[${i}]`;
    const config = objectOf(f.typed_config);
    const type = configTypeOf(f);
    if (type === CONFIG_TYPE.router) {
      checkFields(config, `${at}.typed_config`, report, ROUTER_FIELDS, 'Router');
      upstreamLogs = compileAccessLogs(config.upstream_log, `${at}.typed_config.upstream_log`, report);
      router = {
        suppressEnvoyHeaders: config.suppress_envoy_headers === true,
        respectExpectedRqTimeout: config.respect_expected_rq_timeout === true,
        strictCheckHeaders: compileStrictCheckHeaders(
          config.strict_check_headers,
          `${at}.typed_config`,
          report,
        ),
      };
    } else if (type === CONFIG_TYPE.healthCheck) {
      checkFields(config, `${at}.typed_config`, report, HEALTH_CHECK_FIELDS, 'HealthCheck');
      const matches = listOf(config.headers).flatMap(
        (h, j) =>
          attempt(report, at, () => compileHeaderMatcher(h, `${at}.typed_config.headers[${j}]`)) ?? [],
      );
      healthCheck = { passThrough: config.pass_through_mode === true, matches };
    } else if (type === CONFIG_TYPE.cors) {
      checkFields(config, `${at}.typed_config`, report, FIELD_TABLES.Cors, 'Cors');
      routeFilters.push({ kind: 'cors' });
    } else if (type === CONFIG_TYPE.csrf) {
      routeFilters.push({ kind: 'csrf', policy: compileCsrfPolicy(config, `${at}.typed_config`, report) });
    } else if (type === CONFIG_TYPE.grpcHttp1Bridge) {
      checkFields(config, `${at}.typed_config`, report, FIELD_TABLES.Config, 'Config');
      grpc.push('grpc_http1_bridge');
    } else if (type === CONFIG_TYPE.grpcWeb) {
      checkFields(config, `${at}.typed_config`, report, FIELD_TABLES.GrpcWeb, 'GrpcWeb');
      grpc.push('grpc_web');
    } else if (type === CONFIG_TYPE.tap) {
      // One tap per chain: a request records into one session.
      if (tapConfigId !== null) report.unsupported(at, 'a second tap filter in one chain');
      else tapConfigId = compileTapFilter(config, `${at}.typed_config`, report);
    } else if (type !== '') {
      // An unresolved name was reported by the loader, which resolves every extension.
      report.error(
        `${at}.name`,
        `'${String(f.name ?? type)}' is not an HTTP filter of this build`,
        'unknown',
      );
    }
  });
  // An empty list routes (as before the filter list existed); a non-empty one must say so.
  if (list.length > 0 && configTypeOf(list[list.length - 1] ?? {}) !== CONFIG_TYPE.router)
    report.error(where, `the HTTP filter chain needs the router filter (${ROUTER_NAME}) last`, 'missing');
  return { healthCheck, routeFilters, upstreamLogs, router, tapConfigId, grpc };
}
