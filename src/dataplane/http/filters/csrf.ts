import { CONFIG_TYPE } from '../../../bootstrap/extensions.js';
import { type CsrfPolicy, compileCsrfPolicy, FIELD_TABLES } from '../csrf.js';
import type { HttpFilterFactory } from './api.js';

/** CSRF: runs with CORS among the route filters (src/dataplane/http/route-filters.ts). */
export const csrfFactory: HttpFilterFactory<CsrfPolicy> = {
  configType: CONFIG_TYPE.csrf,
  fieldTables: FIELD_TABLES,
  compile: compileCsrfPolicy,
  install(chain, policy) {
    chain.routeFilters.push({ kind: 'csrf', policy });
  },
  perRoute: compileCsrfPolicy,
};
