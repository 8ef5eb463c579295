import type { JsonObject } from '../../../events/config.js';
import { objectOf } from '../../../reducers/settings/values.js';
import { compileHeaderMatcher, listOf, type RequestTest } from '../router/matchers.js';

const ROUTER = new Set(['proxy.filters.http.router', 'envoy.filters.http.router', 'envoy.router']);
const HEALTH_CHECK = new Set([
  'proxy.filters.http.health_check',
  'envoy.filters.http.health_check',
  'envoy.health_check',
]);

/** The `health_check` HTTP filter: which requests it answers, and whether it passes them on. */
export interface HealthCheckFilter {
  passThrough: boolean;
  matches: RequestTest[];
}

/** The HTTP filter chain this data plane runs: an optional health check, then the router. */
export interface FilterChain {
  healthCheck: HealthCheckFilter | null;
}

/**
 * Reads `http_filters`. Unknown filters are an error naming them, since silently skipping
 * a filter (say, auth) would change what the listener lets through.
 */
export function compileHttpFilters(list: JsonObject[], where: string): FilterChain {
  let healthCheck: HealthCheckFilter | null = null;
  let router = false;
  list.forEach((f, i) => {
    const name = String(f.name ?? '');
    const config = objectOf(f.typed_config ?? f.config);
    if (ROUTER.has(name)) router = true;
    else if (HEALTH_CHECK.has(name)) {
      healthCheck = {
        passThrough: config.pass_through_mode === true,
        matches: listOf(config.headers).map((h, j) =>
          compileHeaderMatcher(h, `${where}[${i}].headers[${j}]`),
        ),
      };
    } else
      throw new Error(
        `${where}[${i}].name: unsupported HTTP filter '${name}' (supported: router, health_check)`,
      );
  });
  if (!router && list.length > 0) throw new Error(`${where}: the chain needs the router filter last`);
  return { healthCheck };
}
