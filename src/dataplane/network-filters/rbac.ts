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
import { joinHostPort } from '../access-log/stream-info.js';
import type { HttpRequest } from '../codec/request.js';
import {
  compileRbacEngine,
  type RbacEngine,
  type RbacSubject,
  rbacAllows,
} from '../http/filters/rbac/engine.js';
import { peerIdentitySource } from '../listeners/peer-identity.js';
import type { ReadFilterFactory } from './api.js';

export interface NetworkRbacSpec {
  /** Stats are `<statPrefix>rbac.allowed` and so on, at the root, as the reference names them. */
  statPrefix: string;
  rules: RbacEngine | null;
  shadow: RbacEngine | null;
}

const RBAC_FIELDS = acting('rules', 'shadow_rules', 'stat_prefix', 'enforcement_type');

/** Compiles an `envoy.config.filter.network.rbac.v2.RBAC`. */
export function compileNetworkRbac(raw: JsonObject, path: string, report: Report): NetworkRbacSpec {
  checkFields(raw, path, report, RBAC_FIELDS, 'RBAC');
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

/** The filter: the rules read each new connection once, when it opens; a denied one is closed. */
const RBAC_V2 = 'envoy.config.filter.network.rbac.v2.RBAC';

export const networkRbacFactory: ReadFilterFactory<NetworkRbacSpec> = {
  name: 'envoy.filters.network.rbac',
  configType: RBAC_V2,
  typeAliases: { 'envoy.extensions.filters.network.rbac.v3.RBAC': RBAC_V2 },
  schema: { file: 'envoy/config/filter/network/rbac/v2.proto' },
  terminal: false,
  fieldTables: { RBAC: RBAC_FIELDS },
  compile: compileNetworkRbac,
  start(spec, { ctx }) {
    const counter = (stat: string) => ctx.stats.counter(`${spec.statPrefix}rbac.${stat}`);
    const allowed = counter('allowed');
    const denied = counter('denied');
    const shadowAllowed = counter('shadow_allowed');
    const shadowDenied = counter('shadow_denied');
    return {
      onNewConnection(socket, proceed) {
        const subject = connectionSubject(socket);
        if (spec.shadow !== null) (rbacAllows(spec.shadow, subject) ? shadowAllowed : shadowDenied).inc();
        if (spec.rules !== null && !rbacAllows(spec.rules, subject)) {
          denied.inc();
          socket.destroy();
          return;
        }
        if (spec.rules !== null) allowed.inc();
        proceed();
      },
    };
  },
};
