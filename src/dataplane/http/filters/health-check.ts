import type { JsonObject } from '../../../../events/config.js';
import { listOf } from '../../../../reducers/settings/values.js';
import { acting, checkFields, type FieldTable } from '../../../bootstrap/honoured.js';
import { attempt, type Report } from '../../../bootstrap/report.js';
import { compileHeaderMatcher } from '../../router/matchers.js';
import type { HttpFilterFactory } from './api.js';
import type { HealthCheckFilter } from './chain.js';

const HEALTH_CHECK_FIELDS: FieldTable = acting('pass_through_mode', 'headers');

/** `health_check`: answered in the exchange before routing (src/dataplane/http/exchange.ts). */
export const healthCheckFactory: HttpFilterFactory<HealthCheckFilter> = {
  name: 'envoy.filters.http.health_check',
  aliases: ['envoy.health_check'],
  configType: 'envoy.config.filter.http.health_check.v2.HealthCheck',
  typeAliases: {
    'envoy.extensions.filters.http.health_check.v3.HealthCheck':
      'envoy.config.filter.http.health_check.v2.HealthCheck',
  },
  schema: { file: 'envoy/config/filter/http/health_check/v2.proto' },
  fieldTables: { HealthCheck: HEALTH_CHECK_FIELDS },
  compile(config: JsonObject, path: string, report: Report) {
    checkFields(config, path, report, HEALTH_CHECK_FIELDS, 'HealthCheck');
    const matches = listOf(config.headers).flatMap(
      (h, j) => attempt(report, path, () => compileHeaderMatcher(h, `${path}.headers[${j}]`)) ?? [],
    );
    return { passThrough: config.pass_through_mode === true, matches };
  },
  install(chain, config) {
    chain.healthCheck = config;
  },
};
