import type { JsonObject } from '../../../events/config.js';
import { objectOf } from '../../../reducers/settings/values.js';
import { acting, checkFields, type FieldTable } from '../../bootstrap/honoured.js';
import { attempt, type Report } from '../../bootstrap/report.js';
import { compileStringMatcher, type StringTest } from '../../config/matchers.js';
import type { Counter, Scope } from '../../stats/store.js';
import { type HttpRequest, headerValue } from '../codec/request.js';
import {
  compileRuntimeFraction,
  fractionEnabled,
  type RuntimeFraction,
  type RuntimeLookup,
} from './runtime-fraction.js';

/** A `csrf.v2.CsrfPolicy`: the filter's own, or a route's or virtual host's override. */
export interface CsrfPolicy {
  enabled: RuntimeFraction;
  /** `shadow_enabled`: check and count, never refuse. */
  shadow: RuntimeFraction | null;
  /** `additional_origins`: source origins accepted besides the request's own host. */
  additionalOrigins: StringTest[];
}

const CSRF_POLICY_FIELDS: FieldTable = acting('filter_enabled', 'shadow_enabled', 'additional_origins');

/** The field tables of this compile step, by the message name its findings use. */
export const FIELD_TABLES = { CsrfPolicy: CSRF_POLICY_FIELDS };

/** Compiles a `CsrfPolicy` (canonical form) found at `where`. */
export function compileCsrfPolicy(raw: JsonObject, where: string, report: Report): CsrfPolicy {
  checkFields(raw, where, report, CSRF_POLICY_FIELDS, 'CsrfPolicy');
  if (raw.filter_enabled === undefined)
    report.error(`${where}.filter_enabled`, 'required field missing', 'missing');
  const origins = Array.isArray(raw.additional_origins) ? raw.additional_origins : [];
  return {
    enabled: compileRuntimeFraction(objectOf(raw.filter_enabled), `${where}.filter_enabled`, report),
    shadow:
      raw.shadow_enabled === undefined
        ? null
        : compileRuntimeFraction(objectOf(raw.shadow_enabled), `${where}.shadow_enabled`, report),
    additionalOrigins: origins.flatMap((m, i) => {
      const at = `${where}.additional_origins[${i}]`;
      return attempt(report, at, () => compileStringMatcher(objectOf(m), at)) ?? [];
    }),
  };
}

/** `scheme://host:port/...` -> `host:port` as written; anything else is compared whole. */
const ABSOLUTE_URL = /^[a-z][a-z0-9+.-]*:\/\/(?:[^/?#@]*@)?([^/?#]*)/i;

function hostAndPort(value: string | undefined): string {
  if (!value) return '';
  const m = ABSOLUTE_URL.exec(value);
  return m ? (m[1] as string) : value;
}

/** The methods that change state, the only ones the reference checks. */
const MUTATING = new Set(['POST', 'PUT', 'DELETE']);

/**
 * The CSRF filter of one connection manager (`http.<stat_prefix>.csrf.*` stats): a POST, PUT
 * or DELETE whose source origin (`Origin`, else `Referer`, as host and port) is neither the
 * request's `Host` nor one of the additional origins is refused 403 `Invalid origin`, unless
 * the policy in force is only in shadow mode. The route's override, else its virtual host's,
 * replaces the filter's own policy on routes to a cluster.
 */
export class CsrfFilter {
  private readonly missingSourceOrigin: Counter;
  private readonly requestInvalid: Counter;
  private readonly requestValid: Counter;

  constructor(
    scope: Scope,
    private readonly policy: CsrfPolicy,
    private readonly runtime: RuntimeLookup,
    private readonly random: () => number,
  ) {
    this.missingSourceOrigin = scope.counter('csrf.missing_source_origin');
    this.requestInvalid = scope.counter('csrf.request_invalid');
    this.requestValid = scope.counter('csrf.request_valid');
  }

  /** True when `req` is to be refused; `override` is the route's or virtual host's policy. */
  rejects(req: HttpRequest, override: CsrfPolicy | null): boolean {
    const policy = override ?? this.policy;
    const enabled = fractionEnabled(policy.enabled, this.runtime, this.random());
    const shadow = policy.shadow !== null && fractionEnabled(policy.shadow, this.runtime, this.random());
    if ((!enabled && !shadow) || !MUTATING.has(req.method)) return false;
    const source = hostAndPort(headerValue(req, 'origin')) || hostAndPort(headerValue(req, 'referer'));
    let valid = true;
    if (!source) {
      valid = false;
      this.missingSourceOrigin.inc();
    }
    if (source !== hostAndPort(req.authority) && !policy.additionalOrigins.some((test) => test(source))) {
      valid = false;
      this.requestInvalid.inc();
    }
    if (valid) {
      this.requestValid.inc();
      return false;
    }
    return enabled;
  }
}
