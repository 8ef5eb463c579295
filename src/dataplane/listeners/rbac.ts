/**
 * `envoy.filters.network.rbac`: the HTTP RBAC filter's compiled rules (../http/filters/rbac/)
 * applied to a new connection before the chain's terminal filter gets it; a denied one is
 * closed. See docs/http-filters.md.
 */
import type * as net from 'node:net';
import type { JsonObject } from '../../../events/config.js';
import { objectOf } from '../../../reducers/settings/values.js';
import { acting, checkFields } from '../../bootstrap/honoured.js';
import type { Report } from '../../bootstrap/report.js';
import type { Counter, StatsStore } from '../../stats/store.js';
import { joinHostPort } from '../access-log/stream-info.js';
import type { HttpRequest } from '../codec/request.js';
import {
  compileRbacEngine,
  type RbacEngine,
  type RbacSubject,
  rbacAllows,
} from '../http/filters/rbac/engine.js';
import type { NetworkFilterHandler } from '../network-filter.js';
import { peerIdentitySource } from './peer-identity.js';

export interface NetworkRbacSpec {
  /** Stats are `<statPrefix>rbac.allowed` and so on, at the root, as the reference names them. */
  statPrefix: string;
  rules: RbacEngine | null;
  shadow: RbacEngine | null;
}

/** Compiles an `envoy.config.filter.network.rbac.v2.RBAC`. */
export function compileNetworkRbac(raw: JsonObject, path: string, report: Report): NetworkRbacSpec {
  checkFields(raw, path, report, acting('rules', 'shadow_rules', 'stat_prefix', 'enforcement_type'), 'RBAC');
  const statPrefix = typeof raw.stat_prefix === 'string' ? raw.stat_prefix : '';
  if (statPrefix === '') report.error(`${path}.stat_prefix`, 'required field missing', 'missing');
  // The default, ONE_TIME_ON_FIRST_BYTE, is what this filter does (once, when the connection opens).
  if (raw.enforcement_type === 'CONTINUOUS' || raw.enforcement_type === 1)
    report.unsupported(`${path}.enforcement_type`, 'CONTINUOUS enforcement is not implemented');
  const engine = (field: string) =>
    raw[field] === undefined
      ? null
      : compileRbacEngine(objectOf(raw[field]), `${path}.${field}`, report, true);
  return { statPrefix, rules: engine('rules'), shadow: engine('shadow_rules') };
}

/** A connection as the rules read it: its addresses and TLS peer, and no HTTP request. */
function connectionSubject(socket: net.Socket): RbacSubject {
  const req: HttpRequest = {
    method: '',
    path: '',
    authority: '',
    scheme: '',
    headers: [],
    protocol: 'HTTP/1.1',
    remoteIp: (socket.remoteAddress ?? '').replace(/^::ffff:/, ''),
    remotePort: socket.remotePort,
    localAddress: joinHostPort(socket.localAddress, socket.localPort),
    contentLength: 0,
    hasBody: false,
  };
  const peer = peerIdentitySource(socket);
  if (peer) req.peer = peer;
  return { req, info: { downstreamRemote: joinHostPort(socket.remoteAddress, socket.remotePort) } };
}

interface Check {
  spec: NetworkRbacSpec;
  allowed: Counter;
  denied: Counter;
  shadowAllowed: Counter;
  shadowDenied: Counter;
}

/** `handler` behind the chain's RBAC filters, in their order: the first that denies closes the connection. */
export function guardWithRbac(
  handler: NetworkFilterHandler,
  specs: NetworkRbacSpec[],
  stats: StatsStore,
): NetworkFilterHandler {
  if (specs.length === 0) return handler;
  const checks: Check[] = specs.map((spec) => {
    const name = (stat: string) => stats.counter(`${spec.statPrefix}rbac.${stat}`);
    return {
      spec,
      allowed: name('allowed'),
      denied: name('denied'),
      shadowAllowed: name('shadow_allowed'),
      shadowDenied: name('shadow_denied'),
    };
  });
  const admits = (socket: net.Socket): boolean => {
    const subject = connectionSubject(socket);
    for (const c of checks) {
      if (c.spec.shadow !== null)
        (rbacAllows(c.spec.shadow, subject) ? c.shadowAllowed : c.shadowDenied).inc();
      if (c.spec.rules === null) continue;
      if (!rbacAllows(c.spec.rules, subject)) {
        c.denied.inc();
        return false;
      }
      c.allowed.inc();
    }
    return true;
  };
  return {
    handle(socket) {
      if (admits(socket)) handler.handle(socket);
      else socket.destroy();
    },
    drain: (strategy, drainTimeMs) => handler.drain(strategy, drainTimeMs),
    close: () => handler.close(),
    connectionIdleMs: handler.connectionIdleMs,
  };
}
