import { compileCsrfPolicy, CsrfFilter, type CsrfPolicy, FIELD_TABLES } from '../csrf.js';
import { randomDraw } from '../runtime-fraction.js';
import {
  CONTINUE,
  type FilterStatus,
  type FilterStream,
  forwardingRoute,
  type HttpFilterFactory,
  STOP_ITERATION,
  type StreamFilter,
} from './api.js';

/**
 * CSRF: refuses a state-changing request from another origin (src/dataplane/http/csrf.ts) with
 * 403 `Invalid origin`. Its route's override, else its virtual host's, replaces the filter's
 * own policy. It keeps nothing per request: every request shares one filter object.
 */
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
  start(policy, ctx) {
    const csrf = new CsrfFilter(ctx.scope, policy, ctx.runtime, randomDraw);
    const filter: StreamFilter = {
      decodeHeaders(stream: FilterStream): FilterStatus {
        const hit = forwardingRoute(stream.route);
        if (!csrf.rejects(stream.req, hit && (hit.route.csrf ?? hit.vh.csrf))) return CONTINUE;
        stream.info.details = 'csrf_origin_mismatch';
        stream.sendLocalReply(403, 'Invalid origin', []);
        return STOP_ITERATION;
      },
    };
    return () => filter;
  },
  perRoute: compileCsrfPolicy,
};
