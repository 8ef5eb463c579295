/**
 * A route's and a virtual host's `rate_limits` (route `RateLimit` messages): which actions
 * make which descriptor, compiled once with the route table, evaluated per request by the
 * ratelimit filter. The table keeps them with the per-filter overrides under two keys, so a
 * filter reads the route's and the virtual host's apart.
 */
import type { JsonObject } from '../../../../../events/config.js';
import { listOf, objectOf } from '../../../../../reducers/settings/values.js';
import { acting, checkFields, type FieldTable, notYet } from '../../../../bootstrap/honoured.js';
import { attempt, type Report } from '../../../../bootstrap/report.js';
import { headToText } from '../../../codec/head-text.js';
import { type HttpRequest, headerValue } from '../../../codec/request.js';
import { compileHeaderMatcher, type RequestTest } from '../../../router/matchers.js';
import type { FilterStream } from '../api.js';

/** One descriptor entry's source, as the reference's `RateLimit.Action`. */
export type RateLimitAction =
  | { kind: 'source_cluster' }
  | { kind: 'destination_cluster' }
  | { kind: 'request_headers'; header: string; key: string }
  | { kind: 'remote_address' }
  | { kind: 'generic_key'; value: string }
  | { kind: 'header_value_match'; value: string; expectMatch: boolean; headers: RequestTest[] };

/** A compiled route `RateLimit`: its stage and the actions of its one descriptor. */
export interface RateLimitPolicy {
  stage: number;
  actions: RateLimitAction[];
}

/** A route's policies and whether its virtual host's apply too (`include_vh_rate_limits`). */
export interface RouteRateLimits {
  policies: RateLimitPolicy[];
  includeVh: boolean;
}

/** The per-filter keys the route table stores them under (not config messages: no `@type` names them). */
export const ROUTE_RATE_LIMITS = 'route.rate_limits';
export const VIRTUAL_HOST_RATE_LIMITS = 'virtual_host.rate_limits';

const ACTION_KINDS = [
  'source_cluster',
  'destination_cluster',
  'request_headers',
  'remote_address',
  'generic_key',
  'header_value_match',
] as const;

/** The field tables of route rate limits, keyed apart from the filter's own `RateLimit`. */
export const ROUTE_RATE_LIMIT_TABLES: Record<string, FieldTable> = {
  RouteRateLimit: {
    ...acting('stage', 'actions'),
    disable_key: notYet('rate limit disable_key'),
  },
  'RouteRateLimit.Action': acting(...ACTION_KINDS),
  'RouteRateLimit.Action.RequestHeaders': acting('header_name', 'descriptor_key'),
  'RouteRateLimit.Action.GenericKey': acting('descriptor_value'),
  'RouteRateLimit.Action.HeaderValueMatch': acting('descriptor_value', 'expect_match', 'headers'),
  'RouteRateLimit.Action.Empty': {},
};

const T = ROUTE_RATE_LIMIT_TABLES;

function compileAction(raw: JsonObject, where: string, report: Report): RateLimitAction | null {
  checkFields(raw, where, report, T['RouteRateLimit.Action'] as FieldTable, 'RateLimit.Action');
  const present = ACTION_KINDS.filter((k) => raw[k] !== undefined);
  if (present.length !== 1) {
    report.error(where, `needs exactly one of ${ACTION_KINDS.join(', ')}`, 'missing');
    return null;
  }
  const kind = present[0] as (typeof ACTION_KINDS)[number];
  const body = objectOf(raw[kind]);
  const at = `${where}.${kind}`;
  const text = (field: string) => (typeof body[field] === 'string' ? (body[field] as string) : '');
  const required = (field: string) => {
    if (text(field) === '') report.error(`${at}.${field}`, 'required field missing', 'missing');
    return text(field);
  };
  switch (kind) {
    case 'source_cluster':
    case 'destination_cluster':
    case 'remote_address':
      checkFields(body, at, report, T['RouteRateLimit.Action.Empty'] as FieldTable, 'RateLimit.Action');
      return { kind };
    case 'request_headers':
      checkFields(
        body,
        at,
        report,
        T['RouteRateLimit.Action.RequestHeaders'] as FieldTable,
        'RequestHeaders',
      );
      return { kind, header: required('header_name').toLowerCase(), key: required('descriptor_key') };
    case 'generic_key':
      checkFields(body, at, report, T['RouteRateLimit.Action.GenericKey'] as FieldTable, 'GenericKey');
      return { kind, value: required('descriptor_value') };
    case 'header_value_match':
      checkFields(
        body,
        at,
        report,
        T['RouteRateLimit.Action.HeaderValueMatch'] as FieldTable,
        'HeaderValueMatch',
      );
      return {
        kind,
        value: required('descriptor_value'),
        expectMatch: body.expect_match !== false,
        headers: listOf(body.headers).flatMap(
          (h, i) => attempt(report, at, () => compileHeaderMatcher(h, `${at}.headers[${i}]`)) ?? [],
        ),
      };
  }
}

/** Compiles a `rate_limits` list (route action or virtual host). */
export function compileRateLimits(value: unknown, where: string, report: Report): RateLimitPolicy[] {
  return listOf(value as JsonObject[]).map((raw, i) => {
    const at = `${where}[${i}]`;
    checkFields(raw, at, report, T.RouteRateLimit as FieldTable, 'RateLimit');
    const stage = Number(raw.stage ?? 0);
    if (!Number.isInteger(stage) || stage < 0 || stage > 10)
      report.error(`${at}.stage`, 'must be in [0, 10]');
    const actions = listOf(raw.actions).flatMap(
      (a, j) => compileAction(a, `${at}.actions[${j}]`, report) ?? [],
    );
    if (actions.length === 0) report.error(`${at}.actions`, 'at least one action is required', 'missing');
    return { stage, actions };
  });
}

/** What the actions read of a request. */
export interface DescriptorSource {
  req: HttpRequest;
  /** The client's address as the edge step trusted it (`ip:port`). */
  remoteAddress: string;
  /** `--service-cluster`: the cluster this proxy serves. */
  localCluster: string;
  /** The route's cluster. */
  routeCluster: string;
}

/** A descriptor: its entries as `[key, value]` pairs. */
export type Descriptor = Array<[string, string]>;

/**
 * The descriptor a policy makes for a request, or null when one of its actions has nothing
 * to say (a header the request lacks, a header match that is not as expected), as the
 * reference then sends no descriptor for that policy.
 */
export function descriptorOf(policy: RateLimitPolicy, source: DescriptorSource): Descriptor | null {
  const out: Descriptor = [];
  for (const action of policy.actions) {
    switch (action.kind) {
      case 'source_cluster':
        out.push(['source_cluster', source.localCluster]);
        break;
      case 'destination_cluster':
        out.push(['destination_cluster', source.routeCluster]);
        break;
      case 'request_headers': {
        const value = headerValue(source.req, action.header);
        if (value === undefined) return null;
        // A descriptor is a protobuf string: the header's UTF-8 as text.
        out.push([action.key, headToText(value)]);
        break;
      }
      case 'remote_address': {
        const ip = addressIp(source.remoteAddress);
        if (ip === '') return null;
        out.push(['remote_address', ip]);
        break;
      }
      case 'generic_key':
        out.push(['generic_key', action.value]);
        break;
      case 'header_value_match':
        if (action.headers.every((t) => t(source.req)) !== action.expectMatch) return null;
        out.push(['header_match', action.value]);
        break;
    }
  }
  return out;
}

/**
 * Which of its virtual host's `rate_limits` a filter adds to a route's (the reference's
 * `VhRateLimitsOptions`): OVERRIDE, the virtual host's when the route has none; INCLUDE, both;
 * IGNORE, the route's alone. A route's `include_vh_rate_limits` makes it INCLUDE.
 */
export type VhRateLimits = 'OVERRIDE' | 'INCLUDE' | 'IGNORE';

/**
 * The descriptors of a request for a filter at `stage`: its route's policies, then its virtual
 * host's as `vh` says; a policy whose actions have nothing to say about the request makes none.
 */
export function requestDescriptors(
  stream: FilterStream,
  stage: number,
  vh: VhRateLimits,
  localCluster: string,
): Descriptor[] {
  const route = stream.perRoute(ROUTE_RATE_LIMITS) as RouteRateLimits | undefined;
  const own = route?.policies ?? [];
  const option = route?.includeVh === true ? 'INCLUDE' : vh;
  const withVh = option === 'INCLUDE' || (option === 'OVERRIDE' && own.length === 0);
  const policies = withVh
    ? [...own, ...((stream.perRoute(VIRTUAL_HOST_RATE_LIMITS) as RateLimitPolicy[] | undefined) ?? [])]
    : own;
  const source = {
    req: stream.req,
    remoteAddress: stream.info.downstreamRemote,
    localCluster,
    routeCluster: stream.routeCluster ?? '',
  };
  const out: Descriptor[] = [];
  for (const policy of policies) {
    if (policy.stage !== stage) continue;
    const descriptor = descriptorOf(policy, source);
    if (descriptor !== null) out.push(descriptor);
  }
  return out;
}

/** The IP of `ip:port` or `[ip]:port`. */
function addressIp(address: string): string {
  const colon = address.lastIndexOf(':');
  const ip = colon > 0 && !address.endsWith(']') ? address.slice(0, colon) : address;
  return ip.replace(/^\[|\]$/g, '');
}

type PerFilter = ReadonlyMap<string, unknown> | null;

/** A route's per-filter map with its action's `rate_limits` and `include_vh_rate_limits` added. */
export function compileRouteRateLimits(
  perFilter: PerFilter,
  action: JsonObject,
  where: string,
  report: Report,
): PerFilter {
  if (action.rate_limits === undefined && action.include_vh_rate_limits === undefined) return perFilter;
  const limits: RouteRateLimits = {
    policies: compileRateLimits(action.rate_limits, `${where}.rate_limits`, report),
    // A BoolValue, as the canonical config holds it: the value, or `{ value }`.
    includeVh:
      action.include_vh_rate_limits === true || objectOf(action.include_vh_rate_limits).value === true,
  };
  return new Map(perFilter ?? []).set(ROUTE_RATE_LIMITS, limits);
}

/** A virtual host's per-filter map with its `rate_limits` added. */
export function compileVirtualHostRateLimits(
  perFilter: PerFilter,
  vh: JsonObject,
  where: string,
  report: Report,
): PerFilter {
  if (vh.rate_limits === undefined) return perFilter;
  const policies = compileRateLimits(vh.rate_limits, `${where}.rate_limits`, report);
  return new Map(perFilter ?? []).set(VIRTUAL_HOST_RATE_LIMITS, policies);
}
