import type { Json, JsonObject } from '../../../../../events/config.js';
import { objectOf } from '../../../../../reducers/settings/values.js';
import { acting, checkFields } from '../../../../bootstrap/honoured.js';
import type { Report } from '../../../../bootstrap/report.js';
import type { Counter, Scope } from '../../../../stats/store.js';
import { setDynamicMetadata } from '../../../access-log/stream-info.js';
import {
  CONTINUE,
  type FilterStatus,
  type FilterStream,
  type HttpFilterFactory,
  STOP_ITERATION,
} from '../api.js';
import { RBAC_FIELD_TABLES, type RbacDecide, type RbacEngine, startRbacEngine } from './engine.js';
import { compileRbacPair, RBAC_MATCHER_FIELD_TABLES, RBAC_MATCHER_PROTO_FILES } from './matcher.js';

/**
 * A compiled HTTP RBAC filter config: the enforced rules and the shadow ones, each optional,
 * and how their outcomes are named in stats and dynamic metadata.
 */
export interface RbacFilterConfig {
  rules: RbacEngine | null;
  shadow: RbacEngine | null;
  /** `rules_stat_prefix`, `shadow_rules_stat_prefix`: in stat names and metadata keys. */
  rulesPrefix: string;
  shadowPrefix: string;
  /** `track_per_rule_stats`: a counter per policy that decided. */
  perRule: boolean;
}

const RBAC_FILTER_FIELDS = acting(
  'rules',
  'shadow_rules',
  'matcher',
  'shadow_matcher',
  'rules_stat_prefix',
  'shadow_rules_stat_prefix',
  'track_per_rule_stats',
);

function compileRbacFilter(raw: JsonObject, path: string, report: Report): RbacFilterConfig {
  checkFields(raw, path, report, RBAC_FILTER_FIELDS, 'RBAC');
  const text = (field: string) => (typeof raw[field] === 'string' ? (raw[field] as string) : '');
  return {
    rules: compileRbacPair(raw, path, report, 'rules', 'matcher'),
    shadow: compileRbacPair(raw, path, report, 'shadow_rules', 'shadow_matcher'),
    rulesPrefix: text('rules_stat_prefix'),
    shadowPrefix: text('shadow_rules_stat_prefix'),
    perRule: raw.track_per_rule_stats === true,
  };
}

/** `RBACPerRoute`: the route's own rules in place of the filter's. */
function compilePerRoute(raw: JsonObject, path: string, report: Report): RbacFilterConfig {
  checkFields(raw, path, report, acting('rbac'), 'RBACPerRoute');
  return compileRbacFilter(objectOf(raw.rbac), `${path}.rbac`, report);
}

/** The reference's `statPrefixJoin`: a dot between the two unless the first ends with one. */
const join = (prefix: string, token: string) =>
  prefix === '' || prefix.endsWith('.') ? prefix + token : `${prefix}.${token}`;

/**
 * The filter's counters, as the reference names them under `http.<stat_prefix>.`:
 * `rbac.[<rules_stat_prefix>.]allowed`, `denied`, shadow ones under the shadow prefix after
 * that, and with `track_per_rule_stats` `...policy.<name>.allowed` (and so on) per policy.
 */
function rbacStats(config: RbacFilterConfig, scope: Scope) {
  const enforced = join('rbac.', config.rulesPrefix);
  const shadow = join(enforced, config.shadowPrefix);
  const counter = (name: string) => scope.counter(name);
  const perPolicy = new Map<string, Counter>();
  const policyCounter = (prefix: string, policy: string, stat: string) => {
    const name = `${join(prefix, 'policy.')}${policy}.${stat}`;
    let c = perPolicy.get(name);
    if (c === undefined) {
      c = counter(name);
      perPolicy.set(name, c);
    }
    return c;
  };
  return {
    allowed: counter(join(enforced, 'allowed')),
    denied: counter(join(enforced, 'denied')),
    logged: counter(join(enforced, 'logged')),
    notLogged: counter(join(enforced, 'not_logged')),
    shadowAllowed: counter(join(shadow, 'shadow_allowed')),
    shadowDenied: counter(join(shadow, 'shadow_denied')),
    policy: (policy: string, stat: 'allowed' | 'denied') => policyCounter(enforced, policy, stat),
    shadowPolicy: (policy: string, stat: 'shadow_allowed' | 'shadow_denied') =>
      policyCounter(shadow, policy, stat),
  };
}

/** The namespace of the filter's dynamic metadata, as the reference's. */
const METADATA_NS = 'envoy.filters.http.rbac';

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
  fieldTables: {
    ...RBAC_FIELD_TABLES,
    ...RBAC_MATCHER_FIELD_TABLES,
    RBAC: RBAC_FILTER_FIELDS,
    RBACPerRoute: acting('rbac'),
  },
  compile: compileRbacFilter,
  perRoute: compilePerRoute,
  perRouteType: PER_ROUTE_TYPE,
  start(base, ctx) {
    // The filter's counters, whichever rules decide (a route's too), as the reference's.
    const stats = rbacStats(base, ctx.scope);
    // Each set of rules (the filter's, each route's) started once, its matcher's counters at the root.
    const started = new WeakMap<RbacEngine, RbacDecide>();
    const counters = (stat: string) => ctx.scope.store.counter(stat);
    const decide = (engine: RbacEngine, stream: FilterStream) => {
      let run = started.get(engine);
      if (run === undefined) {
        run = startRbacEngine(engine, counters);
        started.set(engine, run);
      }
      return run(stream);
    };
    // Stateless per request: one filter object serves them all.
    const filter = {
      decodeHeaders(stream: FilterStream): FilterStatus {
        const route = stream.perRoute(CONFIG_TYPE) as RbacFilterConfig | undefined;
        const config = route ?? base;
        if (config.shadow === null && config.rules === null) return CONTINUE;
        // A route's prefixes name its metadata keys when it has them, as the reference's.
        const rulesKey = route?.rulesPrefix || base.rulesPrefix;
        const shadowKey = route?.shadowPrefix || base.shadowPrefix;
        const metadata: Record<string, Json> = {};
        if (config.shadow !== null) {
          const verdict = decide(config.shadow, stream);
          (verdict.allowed ? stats.shadowAllowed : stats.shadowDenied).inc();
          if (verdict.policy !== '') {
            if (config.perRule)
              stats.shadowPolicy(verdict.policy, verdict.allowed ? 'shadow_allowed' : 'shadow_denied').inc();
            metadata[`${shadowKey}shadow_effective_policy_id`] = verdict.policy;
          }
          metadata[`${shadowKey}shadow_engine_result`] = verdict.allowed ? 'allowed' : 'denied';
        }
        if (config.rules === null) {
          setDynamicMetadata(stream.info, METADATA_NS, metadata);
          return CONTINUE;
        }
        const verdict = decide(config.rules, stream);
        if (verdict.policy !== '') {
          if (config.perRule) stats.policy(verdict.policy, verdict.allowed ? 'allowed' : 'denied').inc();
          metadata[`${rulesKey}enforced_effective_policy_id`] = verdict.policy;
        }
        metadata[`${rulesKey}enforced_engine_result`] = verdict.allowed ? 'allowed' : 'denied';
        if (verdict.logged !== undefined) {
          // A LOG action: the hint access loggers share, as the reference's.
          (verdict.logged ? stats.logged : stats.notLogged).inc();
          setDynamicMetadata(stream.info, 'envoy.common', { access_log_hint: verdict.logged });
        }
        // Before the reply: the access log of a refused request is written as it is answered.
        setDynamicMetadata(stream.info, METADATA_NS, metadata);
        if (verdict.allowed) {
          stats.allowed.inc();
          return CONTINUE;
        }
        stats.denied.inc();
        stream.info.details = `rbac_access_denied_matched_policy[${verdict.policy || 'none'}]`;
        stream.sendLocalReply(403, 'RBAC: access denied');
        return STOP_ITERATION;
      },
    };
    return () => filter;
  },
};
