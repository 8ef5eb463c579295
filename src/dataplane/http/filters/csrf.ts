import { type CsrfPolicy, compileCsrfPolicy, FIELD_TABLES } from '../csrf.js';
import type { HttpFilterFactory } from './api.js';

/** CSRF: runs with CORS among the route filters (src/dataplane/http/route-filters.ts). */
export const csrfFactory: HttpFilterFactory<CsrfPolicy> = {
  name: 'envoy.filters.http.csrf',
  aliases: ['envoy.csrf'],
  configType: 'envoy.config.filter.http.csrf.v2.CsrfPolicy',
  typeAliases: {
    'envoy.extensions.filters.http.csrf.v3.CsrfPolicy': 'envoy.config.filter.http.csrf.v2.CsrfPolicy',
  },
  schema: { file: 'envoy/config/filter/http/csrf/v2.proto' },
  fieldTables: FIELD_TABLES,
  compile: compileCsrfPolicy,
  install(chain, policy) {
    chain.routeFilters.push({ kind: 'csrf', policy });
  },
  perRoute: compileCsrfPolicy,
};
