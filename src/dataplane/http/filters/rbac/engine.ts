import { BlockList, isIPv6 } from 'node:net';
import type { Json, JsonObject } from '../../../../../events/config.js';
import { listOf, objectOf } from '../../../../../reducers/settings/values.js';
import { acting, checkFields, type FieldTable } from '../../../../bootstrap/honoured.js';
import { attempt, type Report } from '../../../../bootstrap/report.js';
import { compileStringMatcher } from '../../../../config/matchers.js';
import type { CounterSource, MatcherPlan } from '../../../../config/unified-matcher.js';
import type { StreamInfo } from '../../../access-log/stream-info.js';
import type { HttpRequest } from '../../../codec/request.js';
import { compileHeaderMatcher } from '../../../router/matchers.js';

/**
 * What a permission or principal reads of a request. The network filter gives a connection
 * as a request without headers, as the reference does; its rules cannot name headers or paths.
 */
export interface RbacSubject {
  req: HttpRequest;
  info: Pick<StreamInfo, 'downstreamRemote'>;
}

type Test = (s: RbacSubject) => boolean;

/** What an RBAC matcher's `on_match` yields (`envoy.config.rbac.v3.Action`). */
export interface RbacAction {
  name: string;
  action: 'ALLOW' | 'DENY' | 'LOG';
}

/**
 * Compiled rules: a `config.rbac.v2.RBAC` (its action and policies) or a `matcher` tree
 * (rbac/matcher.ts) yielding an action, bound to its counters when the filter starts.
 */
export type RbacEngine =
  | { kind: 'policies'; action: 'ALLOW' | 'DENY' | 'LOG'; policies: Array<{ name: string; test: Test }> }
  | { kind: 'matcher'; plan: MatcherPlan<RbacSubject, RbacAction> };

/**
 * What started rules say of a request: whether they let it through, and the policy (or the
 * matcher action's name) that decided, '' when none matched (the reference's effective policy id).
 */
export interface RbacVerdict {
  readonly allowed: boolean;
  readonly policy: string;
  /** A `LOG` action's verdict: whether the request should be logged (a policy matched); else undefined. */
  readonly logged?: boolean;
}

/** Started rules. Their verdicts are made once per policy, so deciding allocates nothing. */
export type RbacDecide = (subject: RbacSubject) => RbacVerdict;

const RBAC_FIELDS: FieldTable = acting('action', 'policies');
const POLICY_FIELDS: FieldTable = acting('permissions', 'principals');
const PERMISSION_FIELDS: FieldTable = {
  ...acting(
    'and_rules',
    'or_rules',
    'any',
    'header',
    'url_path',
    'destination_ip',
    'destination_port',
    'not_rule',
    'requested_server_name',
  ),
};
const PRINCIPAL_FIELDS: FieldTable = {
  ...acting(
    'and_ids',
    'or_ids',
    'any',
    'source_ip',
    'direct_remote_ip',
    'remote_ip',
    'header',
    'url_path',
    'not_id',
    'authenticated',
  ),
};

/** The field tables of the RBAC messages, by message name. */
export const RBAC_FIELD_TABLES = {
  RBAC: RBAC_FIELDS,
  Policy: POLICY_FIELDS,
  Permission: PERMISSION_FIELDS,
  Principal: PRINCIPAL_FIELDS,
  Set: acting('rules', 'ids'),
  PathMatcher: acting('path'),
  Authenticated: acting('principal_name'),
  CidrRange: acting('address_prefix', 'prefix_len'),
};

/** `ip:port` (v6 in brackets or not) -> [ip, port]. */
export function splitHostPort(address: string): [string, number] {
  const colon = address.lastIndexOf(':');
  if (colon < 0) return [address, 0];
  const ip = address.slice(0, colon).replace(/^\[|\]$/g, '');
  return [ip, Number(address.slice(colon + 1))];
}

/** A v4 peer on a dual-stack socket is its v4 address. */
export const plainIp = (ip: string) => (ip.startsWith('::ffff:') && ip.includes('.') ? ip.slice(7) : ip);

export function compileCidr(raw: JsonObject, path: string, report: Report): (ip: string) => boolean {
  checkFields(raw, path, report, RBAC_FIELD_TABLES.CidrRange, 'CidrRange');
  const prefix = typeof raw.address_prefix === 'string' ? raw.address_prefix : '';
  const v6 = isIPv6(prefix);
  const len = raw.prefix_len === undefined ? (v6 ? 128 : 32) : Number(raw.prefix_len);
  const list = new BlockList();
  try {
    list.addSubnet(prefix, len, v6 ? 'ipv6' : 'ipv4');
  } catch {
    report.error(path, `'${prefix}/${len}' is not a CIDR range`);
    return () => false;
  }
  return (ip) => {
    const p = plainIp(ip);
    return list.check(p, isIPv6(p) ? 'ipv6' : 'ipv4');
  };
}

function compileUrlPath(raw: JsonObject, path: string): Test {
  const test = compileStringMatcher(objectOf(raw.path), `${path}.path`);
  return (s) => {
    const q = s.req.path.indexOf('?');
    return test(q < 0 ? s.req.path : s.req.path.slice(0, q));
  };
}

/**
 * The peer certificate's identity: any TLS peer without `principal_name`; with it, the
 * reference tries each URI SAN, then each DNS SAN, then the RFC 2253 subject.
 */
function compileAuthenticated(raw: JsonObject, path: string, report: Report): Test {
  checkFields(raw, path, report, RBAC_FIELD_TABLES.Authenticated, 'Authenticated');
  if (raw.principal_name === undefined) return (s) => s.req.peer !== undefined;
  const test = compileStringMatcher(objectOf(raw.principal_name), `${path}.principal_name`);
  return (s) => {
    const id = s.req.peer?.get();
    if (id === undefined) return false;
    return id.uriSans.some(test) || id.dnsSans.some(test) || test(id.subject);
  };
}

const SET_KEY = { and_rules: 'rules', or_rules: 'rules', and_ids: 'ids', or_ids: 'ids' } as const;

/** Rules that read the HTTP request, which a network filter does not have. */
const HTTP_ONLY = new Set(['header', 'url_path']);

/**
 * A `Permission` (`principal` false) or a `Principal` (true) as a test; exactly one rule is set.
 * `network`: for the network filter, which refuses the HTTP-only rules as the reference does.
 */
function compileRule(
  raw: JsonObject,
  path: string,
  report: Report,
  principal: boolean,
  network: boolean,
): Test {
  const what = principal ? 'Principal' : 'Permission';
  checkFields(raw, path, report, principal ? PRINCIPAL_FIELDS : PERMISSION_FIELDS, what);
  const keys = Object.keys(raw);
  const key = keys[0];
  if (keys.length !== 1 || key === undefined) {
    report.error(path, `a ${what} sets exactly one rule`, 'missing');
    return () => false;
  }
  const value = raw[key] as Json;
  const at = `${path}.${key}`;
  if (network && HTTP_ONLY.has(key)) {
    report.error(at, `${key} can not be used in the network RBAC filter (it sees no HTTP request)`);
    return () => false;
  }
  switch (key) {
    case 'any':
      return () => value === true;
    case 'and_rules':
    case 'or_rules':
    case 'and_ids':
    case 'or_ids': {
      const set = objectOf(value as JsonObject);
      checkFields(set, at, report, acting(SET_KEY[key]), 'Set');
      const tests = listOf(set[SET_KEY[key]]).map((r, i) =>
        compileRule(r, `${at}.${SET_KEY[key]}[${i}]`, report, principal, network),
      );
      return key.startsWith('and') ? (s) => tests.every((t) => t(s)) : (s) => tests.some((t) => t(s));
    }
    case 'not_rule':
    case 'not_id': {
      const inner = compileRule(objectOf(value as JsonObject), at, report, principal, network);
      return (s) => !inner(s);
    }
    case 'header': {
      const test = compileHeaderMatcher(objectOf(value as JsonObject), at);
      return (s) => test(s.req);
    }
    case 'authenticated':
      return compileAuthenticated(objectOf(value as JsonObject), at, report);
    case 'url_path':
      return compileUrlPath(objectOf(value as JsonObject), at);
    case 'destination_ip': {
      const test = compileCidr(objectOf(value as JsonObject), at, report);
      return (s) => test(splitHostPort(s.req.localAddress ?? '')[0]);
    }
    case 'requested_server_name': {
      // The SNI of a TLS connection; '' for a plain one or a hello without it, as the reference.
      const test = compileStringMatcher(objectOf(value as JsonObject), at);
      return (s) => test(s.req.peer?.get().serverName ?? '');
    }
    case 'destination_port':
      return (s) => splitHostPort(s.req.localAddress ?? '')[1] === Number(value);
    case 'source_ip':
    case 'direct_remote_ip': {
      const test = compileCidr(objectOf(value as JsonObject), at, report);
      return (s) => test(s.req.remoteIp);
    }
    case 'remote_ip': {
      // The client's address as the edge step read it (x-forwarded-for when trusted).
      const test = compileCidr(objectOf(value as JsonObject), at, report);
      return (s) => test(splitHostPort(s.info.downstreamRemote)[0]);
    }
    default:
      // Refused by checkFields above.
      return () => false;
  }
}

/**
 * Compiles a `config.rbac.v2.RBAC` (for the network filter when `network`). Policies are tried
 * in name order, as the reference's map.
 */
export function compileRbacEngine(
  raw: JsonObject,
  path: string,
  report: Report,
  network = false,
): RbacEngine {
  checkFields(raw, path, report, RBAC_FIELDS, 'RBAC');
  const action = raw.action === 'DENY' || raw.action === 'LOG' ? raw.action : 'ALLOW';
  const policies = Object.entries(objectOf(raw.policies))
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([name, p]) => {
      const at = `${path}.policies.${name}`;
      const policy = objectOf(p as JsonObject);
      checkFields(policy, at, report, POLICY_FIELDS, 'Policy');
      const build = (field: string, principal: boolean) =>
        listOf(policy[field]).map(
          (r, i): Test =>
            attempt(report, at, () => compileRule(r, `${at}.${field}[${i}]`, report, principal, network)) ??
            (() => false),
        );
      const permissions = build('permissions', false);
      const principals = build('principals', true);
      if (permissions.length === 0)
        report.error(`${at}.permissions`, 'at least one permission is required', 'missing');
      if (principals.length === 0)
        report.error(`${at}.principals`, 'at least one principal is required', 'missing');
      const test: Test = (s) => permissions.some((t) => t(s)) && principals.some((t) => t(s));
      return { name, test };
    });
  return { kind: 'policies', action, policies };
}

/**
 * Starts compiled rules. Policies: ALLOW needs a matching policy, DENY none; LOG lets all
 * through. A matcher: the action it yields decides (LOG lets through); none yielded denies.
 */
export function startRbacEngine(engine: RbacEngine, counters: CounterSource): RbacDecide {
  if (engine.kind === 'matcher') {
    const decide = engine.plan(counters);
    const verdicts = new Map<RbacAction, RbacVerdict>();
    const none: RbacVerdict = { allowed: false, policy: '' };
    return (s) => {
      const action = decide(s);
      if (action === null) return none;
      let verdict = verdicts.get(action);
      if (verdict === undefined) {
        verdict =
          action.action === 'LOG'
            ? { allowed: true, policy: action.name, logged: true }
            : { allowed: action.action !== 'DENY', policy: action.name };
        verdicts.set(action, verdict);
      }
      return verdict;
    };
  }
  const { action, policies } = engine;
  // A LOG action lets every request through; whether a policy matched says whether to log it.
  const logged = (matched: boolean) => (action === 'LOG' ? { logged: matched } : {});
  const hits: RbacVerdict[] = policies.map((p) => ({
    allowed: action !== 'DENY',
    policy: p.name,
    ...logged(true),
  }));
  const miss: RbacVerdict = { allowed: action !== 'ALLOW', policy: '', ...logged(false) };
  return (s) => {
    for (let i = 0; i < policies.length; i++)
      if ((policies[i] as { test: Test }).test(s)) return hits[i] as RbacVerdict;
    return miss;
  };
}
