/**
 * The RBAC filters' `matcher` / `shadow_matcher`: the unified matcher (src/config/unified-matcher.ts)
 * over what the reference's RBAC matchers read of a request or connection, yielding an
 * `envoy.config.rbac.v3.Action`. A request no matcher decides is denied, as the reference's.
 */
import { isIP } from 'node:net';
import type { JsonObject } from '../../../../../events/config.js';
import { listOf, objectOf } from '../../../../../reducers/settings/values.js';
import { acting, checkFields, type FieldTable } from '../../../../bootstrap/honoured.js';
import type { Report } from '../../../../bootstrap/report.js';
import {
  type CustomMatch,
  compileMatcher,
  MATCHER_FIELD_TABLES,
  type MatcherDomain,
  type MatchInput,
} from '../../../../config/unified-matcher.js';
import { headerValue } from '../../../codec/request.js';

import {
  compileCidr,
  compileRbacEngine,
  plainIp,
  type RbacAction,
  type RbacEngine,
  type RbacSubject,
  splitHostPort,
} from './engine.js';

const NETWORK = 'envoy.extensions.matching.common_inputs.network.v3.';
const SSL = 'envoy.extensions.matching.common_inputs.ssl.v3.';
const ACTION = 'envoy.config.rbac.v3.Action';
const IP_MATCHER = 'envoy.extensions.matching.input_matchers.ip.v3.Ip';

/** The files of the messages a matcher carries in an `Any`, for the loader's schema. */
export const RBAC_MATCHER_PROTO_FILES = [
  'envoy/config/rbac/v3.proto',
  'envoy/type/matcher/v3.proto',
  'envoy/extensions/matching/common_inputs/network/v3.proto',
  'envoy/extensions/matching/common_inputs/ssl/v3.proto',
  'envoy/extensions/matching/input_matchers/ip/v3.proto',
];

export const RBAC_MATCHER_FIELD_TABLES: Record<string, FieldTable> = {
  ...MATCHER_FIELD_TABLES,
  Action: acting('name', 'action'),
  HttpRequestHeaderMatchInput: acting('header_name'),
  HttpRequestQueryParamMatchInput: acting('query_param'),
  Ip: acting('cidr_ranges', 'stat_prefix'),
};

const port = (address: string | undefined): string | null => {
  const p = splitHostPort(address ?? '')[1];
  return p > 0 ? String(p) : null;
};
const orNull = (s: string | undefined): string | null => (s === undefined || s === '' ? null : s);
const isLoopback = (ip: string) => ip.startsWith('127.') || ip === '::1';

/** The connection's inputs, which both filters read, by message name. */
const CONNECTION_INPUTS: Record<string, MatchInput<RbacSubject>> = {
  [`${NETWORK}DestinationIPInput`]: (s) => orNull(plainIp(splitHostPort(s.req.localAddress ?? '')[0])),
  [`${NETWORK}DestinationPortInput`]: (s) => port(s.req.localAddress),
  // The client as the edge step read it (x-forwarded-for when trusted), as the reference's remote address.
  [`${NETWORK}SourceIPInput`]: (s) => orNull(plainIp(splitHostPort(s.info.downstreamRemote)[0])),
  [`${NETWORK}SourcePortInput`]: (s) => port(s.info.downstreamRemote),
  [`${NETWORK}DirectSourceIPInput`]: (s) => orNull(plainIp(s.req.remoteIp)),
  // "local" for a peer on this host (loopback or the address it connected to), else nothing.
  [`${NETWORK}SourceTypeInput`]: (s) => {
    const peer = plainIp(s.req.remoteIp);
    return isLoopback(peer) || peer === plainIp(splitHostPort(s.req.localAddress ?? '')[0]) ? 'local' : null;
  },
  [`${SSL}UriSanInput`]: (s) => orNull(s.req.peer?.get().uriSans.join(',')),
  [`${SSL}DnsSanInput`]: (s) => orNull(s.req.peer?.get().dnsSans.join(',')),
  [`${SSL}SubjectInput`]: (s) => orNull(s.req.peer?.get().subject),
  [`${NETWORK}ServerNameInput`]: (s) => orNull(s.req.peer?.get().serverName),
};

/** Inputs the reference offers that this build refuses, with what to use instead. */
const REFUSED_INPUTS: Record<string, string> = {
  [`${NETWORK}TransportProtocolInput`]:
    'the transport protocol input is not implemented; use a filter chain match on transport_protocol',
  [`${NETWORK}ApplicationProtocolInput`]:
    'the application protocol input is not implemented; use a filter chain match on application_protocols',
  [`${NETWORK}FilterStateInput`]: 'the filter state input is not implemented',
};

function httpInput(
  type: string,
  config: JsonObject,
  path: string,
  report: Report,
): MatchInput<RbacSubject> | undefined {
  if (type === 'envoy.type.matcher.v3.HttpRequestHeaderMatchInput') {
    checkFields(
      config,
      path,
      report,
      RBAC_MATCHER_FIELD_TABLES.HttpRequestHeaderMatchInput!,
      'HttpRequestHeaderMatchInput',
    );
    const name = typeof config.header_name === 'string' ? config.header_name.toLowerCase() : '';
    if (name === '') report.error(`${path}.header_name`, 'required field missing', 'missing');
    return (s) => headerValue(s.req, name) ?? null;
  }
  if (type === 'envoy.type.matcher.v3.HttpRequestQueryParamMatchInput') {
    checkFields(
      config,
      path,
      report,
      RBAC_MATCHER_FIELD_TABLES.HttpRequestQueryParamMatchInput!,
      'HttpRequestQueryParamMatchInput',
    );
    const name = typeof config.query_param === 'string' ? config.query_param : '';
    if (name === '') report.error(`${path}.query_param`, 'required field missing', 'missing');
    return (s) => {
      const q = s.req.path.indexOf('?');
      return q < 0 ? null : new URLSearchParams(s.req.path.slice(q + 1)).get(name);
    };
  }
  return undefined;
}

/** The `Ip` input matcher: the value is an address in one of the ranges; one that is no address is counted. */
function compileIpMatcher(config: JsonObject, path: string, report: Report): CustomMatch {
  checkFields(config, path, report, RBAC_MATCHER_FIELD_TABLES.Ip!, 'Ip');
  const ranges = listOf(config.cidr_ranges).map((r, i) =>
    compileCidr(r, `${path}.cidr_ranges[${i}]`, report),
  );
  if (ranges.length === 0) report.error(`${path}.cidr_ranges`, 'at least one range is required', 'missing');
  const prefix = typeof config.stat_prefix === 'string' ? config.stat_prefix : '';
  if (prefix === '') report.error(`${path}.stat_prefix`, 'required field missing', 'missing');
  return (counters) => {
    const failed = counters(`${prefix.endsWith('.') ? prefix : `${prefix}.`}ip_parsing_failed`);
    return (value) => {
      if (value === null) return false;
      if (isIP(value) === 0) {
        failed.inc();
        return false;
      }
      return ranges.some((test) => test(value));
    };
  };
}

function rbacDomain(network: boolean): MatcherDomain<RbacSubject, RbacAction> {
  return {
    what: 'RBAC',
    input(type, config, path, report) {
      const connection = CONNECTION_INPUTS[type];
      if (connection) return connection;
      const refused = REFUSED_INPUTS[type];
      if (refused !== undefined) {
        report.unsupported(path, refused);
        return undefined;
      }
      const http = network ? undefined : httpInput(type, config, path, report);
      if (http) return http;
      report.unsupported(
        path,
        network && type.startsWith('envoy.type.matcher.v3.Http')
          ? `${type} can not be used in the network RBAC filter (it sees no HTTP request)`
          : `${type} is not an input the RBAC matcher reads`,
      );
      return undefined;
    },
    customMatch(type, config, path, report) {
      if (type === IP_MATCHER) return compileIpMatcher(config, path, report);
      report.unsupported(
        path,
        `${type} is not implemented as an RBAC custom matcher (use ${IP_MATCHER} or a value_match)`,
      );
      return undefined;
    },
    action(type, config, path, report) {
      if (type !== ACTION) {
        report.unsupported(path, `${type} is not an RBAC action (use ${ACTION})`);
        return undefined;
      }
      checkFields(config, path, report, RBAC_MATCHER_FIELD_TABLES.Action!, 'Action');
      const name = typeof config.name === 'string' ? config.name : '';
      if (name === '') report.error(`${path}.name`, 'required field missing', 'missing');
      const action =
        config.action === 'DENY' || config.action === 1
          ? 'DENY'
          : config.action === 'LOG' || config.action === 2
            ? 'LOG'
            : 'ALLOW';
      return { name, action };
    },
  };
}

/**
 * Compiles an RBAC filter's `matcher` (for the network filter when `network`, which refuses the
 * HTTP inputs as the reference does) into an engine deciding by the action the tree yields.
 */
function compileRbacMatcher(raw: JsonObject, path: string, report: Report, network = false): RbacEngine {
  const plan = compileMatcher(raw, path, report, rbacDomain(network));
  return { kind: 'matcher', plan };
}

/**
 * `rules` or `matcher` (the shadow ones likewise): when both are set the reference uses the
 * matcher and ignores the rules, and so does this, with a warning. `network`: for the network filter.
 */
export function compileRbacPair(
  raw: JsonObject,
  path: string,
  report: Report,
  rules: string,
  matcher: string,
  network = false,
): RbacEngine | null {
  if (raw[matcher] !== undefined) {
    if (raw[rules] !== undefined)
      report.warn(`${path}.${rules}`, `${rules} is ignored: ${matcher} is set too (as the reference)`);
    return compileRbacMatcher(objectOf(raw[matcher]), `${path}.${matcher}`, report, network);
  }
  return raw[rules] === undefined
    ? null
    : compileRbacEngine(objectOf(raw[rules]), `${path}.${rules}`, report, network);
}
