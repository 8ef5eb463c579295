/**
 * The shape of a compiled HTTP filter chain, apart from the compile step (../filters.ts) and the
 * factories (registry.ts), so that a factory can name the chain it fills without importing the
 * registry that imports it.
 */
import type { AccessLogSpec } from '../../access-log/config.js';
import type { RequestTest } from '../../router/matchers.js';

/** The `health_check` HTTP filter: which requests it answers, and whether it passes them on. */
export interface HealthCheckFilter {
  passThrough: boolean;
  matches: RequestTest[];
}

/**
 * The HTTP filter chain this data plane runs: an optional health check, the per-request
 * filters in their order, then the router.
 */
export interface FilterChain {
  healthCheck: HealthCheckFilter | null;
  /**
   * The router's `upstream_log`: one line per request that went upstream, describing its
   * last attempt (the reference writes one per attempt).
   */
  upstreamLogs: AccessLogSpec[];
  /** The router's `suppress_envoy_headers` and `respect_expected_rq_timeout` (docs/edge.md). */
  router: RouterOptions;
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

/** A per-request filter of a chain: its factory's message and compiled config. */
export interface StreamFilterSpec {
  configType: string;
  config: unknown;
  /** Its `http_filters` entry's `name`, by which a route's `typed_per_filter_config` may key its override. */
  name: string;
}
