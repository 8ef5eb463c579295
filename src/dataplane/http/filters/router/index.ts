import type { JsonObject } from '../../../../../events/config.js';
import { acting, checkFields, type FieldTable } from '../../../../bootstrap/honoured.js';
import type { Report } from '../../../../bootstrap/report.js';
import { type AccessLogSpec, compileAccessLogs } from '../../../access-log/config.js';
import { STRICT_CHECKABLE } from '../../../router/request-controls.js';
import type { HttpFilterFactory } from '../api.js';
import type { RouterOptions } from '../chain.js';

const ROUTER_FIELDS: FieldTable = {
  // Stats this build does not keep either way; both are hints to the reference's stats code.
  dynamic_stats: 'advise',
  start_child_span: 'advise',
  ...acting('upstream_log', 'suppress_envoy_headers', 'respect_expected_rq_timeout', 'strict_check_headers'),
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

/** The router: the chain's last filter, sending the request upstream (src/dataplane/http/exchange.ts). */
export const routerFactory: HttpFilterFactory<{ router: RouterOptions; upstreamLogs: AccessLogSpec[] }> = {
  name: 'envoy.filters.http.router',
  aliases: ['envoy.router'],
  configType: 'envoy.config.filter.http.router.v2.Router',
  typeAliases: {
    'envoy.extensions.filters.http.router.v3.Router': 'envoy.config.filter.http.router.v2.Router',
  },
  schema: { file: 'envoy/config/filter/http/router/v2.proto' },
  fieldTables: { Router: ROUTER_FIELDS },
  compile(config: JsonObject, path: string, report: Report) {
    checkFields(config, path, report, ROUTER_FIELDS, 'Router');
    return {
      upstreamLogs: compileAccessLogs(config.upstream_log, `${path}.upstream_log`, report),
      router: {
        suppressEnvoyHeaders: config.suppress_envoy_headers === true,
        respectExpectedRqTimeout: config.respect_expected_rq_timeout === true,
        strictCheckHeaders: compileStrictCheckHeaders(config.strict_check_headers, path, report),
      },
    };
  },
  install(chain, config) {
    chain.router = config.router;
    chain.upstreamLogs = config.upstreamLogs;
  },
};
