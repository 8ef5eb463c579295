import type { JsonObject } from '../../../../../events/config.js';
import { objectOf } from '../../../../../reducers/settings/values.js';
import { acting, checkFields } from '../../../../bootstrap/honoured.js';
import type { Report } from '../../../../bootstrap/report.js';
import {
  CONTINUE,
  type FilterStatus,
  type FilterStream,
  type HttpFilterFactory,
  STOP_ITERATION,
} from '../api.js';
import { RBAC_FIELD_TABLES, type RbacDecide, type RbacEngine, startRbacEngine } from './engine.js';
import { compileRbacPair, RBAC_MATCHER_FIELD_TABLES, RBAC_MATCHER_PROTO_FILES } from './matcher.js';

/** A compiled HTTP RBAC filter config: the enforced rules and the shadow ones, each optional. */
export interface RbacFilterConfig {
  rules: RbacEngine | null;
  shadow: RbacEngine | null;
}

function compileRbacFilter(raw: JsonObject, path: string, report: Report): RbacFilterConfig {
  checkFields(raw, path, report, acting('rules', 'shadow_rules', 'matcher', 'shadow_matcher'), 'RBAC');
  return {
    rules: compileRbacPair(raw, path, report, 'rules', 'matcher'),
    shadow: compileRbacPair(raw, path, report, 'shadow_rules', 'shadow_matcher'),
  };
}

/** `RBACPerRoute`: the route's own rules in place of the filter's. */
function compilePerRoute(raw: JsonObject, path: string, report: Report): RbacFilterConfig {
  checkFields(raw, path, report, acting('rbac'), 'RBACPerRoute');
  return compileRbacFilter(objectOf(raw.rbac), `${path}.rbac`, report);
}

/** The filter's counters, under `http.<stat_prefix>.rbac.`. */
const RBAC_COUNTERS = {
  allowed: 'allowed',
  denied: 'denied',
  shadowAllowed: 'shadow_allowed',
  shadowDenied: 'shadow_denied',
};

/** `envoy.filters.http.rbac`: answers 403 to requests its rules refuse (docs/http-filters.md). */
const CONFIG_TYPE = 'envoy.config.filter.http.rbac.v2.RBAC';
const PER_ROUTE_TYPE = 'envoy.config.filter.http.rbac.v2.RBACPerRoute';

export const rbacFactory: HttpFilterFactory<RbacFilterConfig> = {
  name: 'envoy.filters.http.rbac',
  configType: CONFIG_TYPE,
  typeAliases: {
    'envoy.extensions.filters.http.rbac.v3.RBAC': CONFIG_TYPE,
    'envoy.extensions.filters.http.rbac.v3.RBACPerRoute': PER_ROUTE_TYPE,
  },
  schema: { file: ['envoy/config/filter/http/rbac/v2.proto', ...RBAC_MATCHER_PROTO_FILES] },
  fieldTables: { ...RBAC_FIELD_TABLES, ...RBAC_MATCHER_FIELD_TABLES, RBACPerRoute: acting('rbac') },
  compile: compileRbacFilter,
  perRoute: compilePerRoute,
  perRouteType: PER_ROUTE_TYPE,
  start(base, ctx) {
    const scope = ctx.scope.scope('rbac');
    const stats = scope.counters(RBAC_COUNTERS);
    // Each set of rules (the filter's, each route's) started once, its matcher's counters at the root.
    const started = new WeakMap<RbacEngine, RbacDecide>();
    const counters = (stat: string) => ctx.scope.store.counter(stat);
    const allows = (engine: RbacEngine, stream: FilterStream) => {
      let decide = started.get(engine);
      if (decide === undefined) {
        decide = startRbacEngine(engine, counters);
        started.set(engine, decide);
      }
      return decide(stream);
    };
    // Stateless per request: one filter object serves them all.
    const filter = {
      decodeHeaders(stream: FilterStream): FilterStatus {
        const config = (stream.perRoute(CONFIG_TYPE) as RbacFilterConfig | undefined) ?? base;
        if (config.shadow !== null)
          (allows(config.shadow, stream) ? stats.shadowAllowed : stats.shadowDenied).inc();
        if (config.rules === null) return CONTINUE;
        if (allows(config.rules, stream)) {
          stats.allowed.inc();
          return CONTINUE;
        }
        stats.denied.inc();
        stream.sendLocalReply(403, 'RBAC: access denied');
        return STOP_ITERATION;
      },
    };
    return () => filter;
  },
};
