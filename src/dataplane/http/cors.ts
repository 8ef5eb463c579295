import type { JsonObject } from '../../../events/config.js';
import { objectOf } from '../../../reducers/settings/values.js';
import { acting, checkFields, type FieldTable } from '../../bootstrap/honoured.js';
import { attempt, type Report } from '../../bootstrap/report.js';
import { compileRegex, compileStringMatcher, type StringTest } from '../../config/matchers.js';
import type { Counter, Scope } from '../../stats/store.js';
import { type HttpRequest, headerValue, setHeader } from '../codec/request.js';
import { headerValueField } from '../router/header-mutation.js';
import {
  compileRuntimeFraction,
  fractionEnabled,
  type RuntimeFraction,
  type RuntimeLookup,
} from './runtime-fraction.js';

/**
 * A `route.CorsPolicy` of a virtual host or a route action. Each setting left empty (or
 * unset) here is taken from the virtual host's policy when the route has its own.
 */
export interface CorsPolicy {
  /** `allow_origin` (exact), `allow_origin_regex`, `allow_origin_string_match`, in that order. */
  origins: StringTest[];
  allowMethods: string;
  allowHeaders: string;
  exposeHeaders: string;
  maxAge: string;
  /** Null when unset: the virtual host's value, then false. */
  allowCredentials: boolean | null;
  /** `filter_enabled`, or the deprecated `enabled` (true when neither is set). */
  enabled: RuntimeFraction | boolean;
  /** `shadow_enabled`: check origins and count them, but change nothing. */
  shadow: RuntimeFraction | null;
}

const CORS_POLICY_FIELDS: FieldTable = acting(
  'allow_origin',
  'allow_origin_regex',
  'allow_origin_string_match',
  'allow_methods',
  'allow_headers',
  'expose_headers',
  'max_age',
  'allow_credentials',
  'enabled',
  'filter_enabled',
  'shadow_enabled',
);

/** The field tables of this compile step, by the message name its findings use. */
export const FIELD_TABLES = { CorsPolicy: CORS_POLICY_FIELDS };

const strings = (v: unknown): string[] => (Array.isArray(v) ? v.map(String) : []);

/** Compiles a `CorsPolicy` (canonical form) found at `where`. */
export function compileCorsPolicy(raw: JsonObject, where: string, report: Report): CorsPolicy {
  checkFields(raw, where, report, CORS_POLICY_FIELDS, 'CorsPolicy');
  const origins: StringTest[] = strings(raw.allow_origin).map((origin) => (v) => v === origin);
  strings(raw.allow_origin_regex).forEach((pattern, i) => {
    const at = `${where}.allow_origin_regex[${i}]`;
    const test = attempt(report, at, () => compileRegex(pattern, at));
    if (test) origins.push(test);
  });
  const matchers = Array.isArray(raw.allow_origin_string_match) ? raw.allow_origin_string_match : [];
  matchers.forEach((m, i) => {
    const at = `${where}.allow_origin_string_match[${i}]`;
    const test = attempt(report, at, () => compileStringMatcher(objectOf(m), at));
    if (test) origins.push(test);
  });
  return {
    origins,
    allowMethods: headerValueField(raw.allow_methods, `${where}.allow_methods`, report),
    allowHeaders: headerValueField(raw.allow_headers, `${where}.allow_headers`, report),
    exposeHeaders: headerValueField(raw.expose_headers, `${where}.expose_headers`, report),
    maxAge: headerValueField(raw.max_age, `${where}.max_age`, report),
    allowCredentials: typeof raw.allow_credentials === 'boolean' ? raw.allow_credentials : null,
    enabled:
      raw.filter_enabled !== undefined
        ? compileRuntimeFraction(objectOf(raw.filter_enabled), `${where}.filter_enabled`, report)
        : raw.enabled !== false,
    shadow:
      raw.shadow_enabled === undefined
        ? null
        : compileRuntimeFraction(objectOf(raw.shadow_enabled), `${where}.shadow_enabled`, report),
  };
}

/** What the CORS filter adds to the response of a request whose origin it allowed. */
export interface CorsResponse {
  origin: string;
  credentials: boolean;
  exposeHeaders: string;
}

/** The CORS filter's verdict on one request: headers for its response, and a preflight answer. */
export interface CorsVerdict {
  response: CorsResponse;
  /** The local 200 answer's headers when the request is a preflight; null to go on. */
  preflight: string[] | null;
}

/** The first non-empty value of a setting, the route's policy before the virtual host's. */
function firstString(
  route: CorsPolicy | null,
  vh: CorsPolicy | null,
  pick: (p: CorsPolicy) => string,
): string {
  const own = route ? pick(route) : '';
  return own || (vh ? pick(vh) : '');
}

/**
 * The CORS filter of one connection manager (`http.<stat_prefix>.cors.*` stats), deciding per
 * request as the reference's v2 filter does: only routes to a cluster take part; the route's
 * policy, else the virtual host's, says whether the filter is on; a request with an allowed
 * `Origin` has its response marked, and an allowed preflight (OPTIONS with
 * `Access-Control-Request-Method`) is answered here. A disallowed origin changes nothing.
 */
export class CorsFilter {
  private readonly originValid: Counter;
  private readonly originInvalid: Counter;

  constructor(
    scope: Scope,
    private readonly runtime: RuntimeLookup,
    private readonly random: () => number,
  ) {
    this.originValid = scope.counter('cors.origin_valid');
    this.originInvalid = scope.counter('cors.origin_invalid');
  }

  private on(setting: RuntimeFraction | boolean | null): boolean {
    if (setting === null || typeof setting === 'boolean') return setting === true;
    return fractionEnabled(setting, this.runtime, this.random());
  }

  /** The verdict for `req` under the policies of its route and virtual host; null when none applies. */
  decode(req: HttpRequest, route: CorsPolicy | null, vh: CorsPolicy | null): CorsVerdict | null {
    const first = route ?? vh;
    if (first === null) return null;
    const enabled = this.on(first.enabled);
    const shadow = this.on(first.shadow);
    if (!enabled && !shadow) return null;
    const origin = headerValue(req, 'origin');
    if (!origin) return null;
    const allowed = (route?.origins.length ? route : vh)?.origins ?? [];
    if (!allowed.some((test) => test('*') || test(origin))) {
      this.originInvalid.inc();
      return null;
    }
    this.originValid.inc();
    if (!enabled) return null;
    const credentials = (route?.allowCredentials ?? vh?.allowCredentials) === true;
    const response: CorsResponse = {
      origin,
      credentials,
      exposeHeaders: firstString(route, vh, (p) => p.exposeHeaders),
    };
    const requestMethod = req.method === 'OPTIONS' ? headerValue(req, 'access-control-request-method') : '';
    if (!requestMethod) return { response, preflight: null };
    const preflight = ['access-control-allow-origin', origin];
    if (credentials) preflight.push('access-control-allow-credentials', 'true');
    const methods = firstString(route, vh, (p) => p.allowMethods);
    if (methods) preflight.push('access-control-allow-methods', methods);
    const headers = firstString(route, vh, (p) => p.allowHeaders);
    if (headers) preflight.push('access-control-allow-headers', headers);
    const maxAge = firstString(route, vh, (p) => p.maxAge);
    if (maxAge) preflight.push('access-control-max-age', maxAge);
    return { response, preflight };
  }
}

/**
 * Marks a response (`headers`, in place) for a request the filter allowed: its origin, and
 * the credentials and expose settings. Local replies pass here too, the preflight answer
 * included, as every response passes the reference's encoder filters.
 */
export function addCorsHeaders(headers: string[], cors: CorsResponse): void {
  setHeader(headers, 'access-control-allow-origin', cors.origin);
  if (cors.credentials) setHeader(headers, 'access-control-allow-credentials', 'true');
  if (cors.exposeHeaders) setHeader(headers, 'access-control-expose-headers', cors.exposeHeaders);
}
