/**
 * `envoy.filters.network.rbac`: the HTTP RBAC filter's compiled rules (../http/filters/rbac/)
 * applied to a new connection before the chain's terminal filter gets it; a denied one is
 * closed. See docs/http-filters.md.
 */
import type * as net from 'node:net';
import type { JsonObject } from '../../../events/config.js';
import { acting, checkFields } from '../../bootstrap/honoured.js';
import type { Report } from '../../bootstrap/report.js';
import { joinHostPort } from '../access-log/stream-info.js';
import type { HttpRequest } from '../codec/request.js';
import { durationField } from '../http/timeouts.js';
import { type RbacEngine, type RbacSubject, startRbacEngine } from '../http/filters/rbac/engine.js';
import {
  compileRbacPair,
  RBAC_MATCHER_FIELD_TABLES,
  RBAC_MATCHER_PROTO_FILES,
} from '../http/filters/rbac/matcher.js';
import { peerIdentitySource } from '../listeners/peer-identity.js';
import type { ReadFilterFactory } from './api.js';

export interface NetworkRbacSpec {
  /**
   * Stats are `<statPrefix>rbac.allowed` and so on, at the root, as the reference names them;
   * the shadow ones after `shadow_rules_stat_prefix` (`shadowPrefix`).
   */
  statPrefix: string;
  shadowPrefix: string;
  /** `delay_deny`: how long a denied connection is held before it is closed; 0 closes it at once. */
  delayDenyMs: number;
  rules: RbacEngine | null;
  shadow: RbacEngine | null;
}

const RBAC_FIELDS = acting(
  'rules',
  'shadow_rules',
  'matcher',
  'shadow_matcher',
  'stat_prefix',
  'enforcement_type',
  'shadow_rules_stat_prefix',
  'delay_deny',
);

/** Compiles an `envoy.config.filter.network.rbac.v2.RBAC`. */
export function compileNetworkRbac(raw: JsonObject, path: string, report: Report): NetworkRbacSpec {
  checkFields(raw, path, report, RBAC_FIELDS, 'RBAC');
  const statPrefix = typeof raw.stat_prefix === 'string' ? raw.stat_prefix : '';
  if (statPrefix === '') report.error(`${path}.stat_prefix`, 'required field missing', 'missing');
  // The default, ONE_TIME_ON_FIRST_BYTE, is what this filter does (once, when the connection opens).
  if (raw.enforcement_type === 'CONTINUOUS' || raw.enforcement_type === 1)
    report.unsupported(`${path}.enforcement_type`, 'CONTINUOUS enforcement is not implemented');
  return {
    statPrefix,
    shadowPrefix: typeof raw.shadow_rules_stat_prefix === 'string' ? raw.shadow_rules_stat_prefix : '',
    delayDenyMs: durationField(raw.delay_deny, 0, `${path}.delay_deny`, report),
    rules: compileRbacPair(raw, path, report, 'rules', 'matcher', true),
    shadow: compileRbacPair(raw, path, report, 'shadow_rules', 'shadow_matcher', true),
  };
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
  schema: { file: ['envoy/config/filter/network/rbac/v2.proto', ...RBAC_MATCHER_PROTO_FILES] },
  terminal: false,
  fieldTables: { RBAC: RBAC_FIELDS, ...RBAC_MATCHER_FIELD_TABLES },
  compile: compileNetworkRbac,
  start(spec, { ctx }) {
    const counter = (stat: string) => ctx.stats.counter(`${spec.statPrefix}rbac.${stat}`);
    const allowed = counter('allowed');
    const denied = counter('denied');
    const shadowAt = spec.shadowPrefix === '' ? '' : `${spec.shadowPrefix.replace(/\.$/, '')}.`;
    const shadowAllowed = counter(`${shadowAt}shadow_allowed`);
    const shadowDenied = counter(`${shadowAt}shadow_denied`);
    const start = (engine: RbacEngine | null) =>
      engine === null ? null : startRbacEngine(engine, (stat) => ctx.stats.counter(stat));
    const rules = start(spec.rules);
    const shadow = start(spec.shadow);
    return {
      onNewConnection(socket, proceed) {
        const subject = connectionSubject(socket);
        if (shadow !== null) (shadow(subject).allowed ? shadowAllowed : shadowDenied).inc();
        if (rules !== null && !rules(subject).allowed) {
          denied.inc();
          if (spec.delayDenyMs <= 0) {
            socket.destroy();
            return;
          }
          // Held, its bytes unread (the chain holds them until a filter proceeds), then closed.
          const timer = setTimeout(() => socket.destroy(), spec.delayDenyMs);
          socket.once('close', () => clearTimeout(timer));
          return;
        }
        if (rules !== null) allowed.inc();
        proceed();
      },
    };
  },
};
