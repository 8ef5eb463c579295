/**
 * `envoy.filters.network.ext_authz`: each connection of its chain is checked with a gRPC
 * authorizer (`envoy.service.auth.v2` or `.v3` `Authorization/Check`, the HTTP filter's client
 * and verdict, ../../http/filters/ext-authz/) when its first bytes arrive, which wait for the
 * verdict; a denied one is closed. Stats under `ext_authz.<stat_prefix>.`. See docs/data-plane.md.
 */
import type * as net from 'node:net';
import type * as tls from 'node:tls';
import type { JsonObject } from '../../../../events/config.js';
import { objectOf } from '../../../../reducers/settings/values.js';
import { acting, checkFields } from '../../../bootstrap/honoured.js';
import type { Report } from '../../../bootstrap/report.js';
import { checkCall, grpcVerdict } from '../../http/filters/ext-authz/check.js';
import { compileGrpc, type GrpcAuthorizer } from '../../http/filters/ext-authz/config.js';
import { FILTER_GRPC_SERVICE_TABLES, grpcUnary } from '../../http/filters/grpc-call.js';
import { peerIdentitySource } from '../../listeners/peer-identity.js';
import type { ReadFilterFactory } from '../api.js';
import { holdReads } from '../hold-reads.js';

export interface NetworkExtAuthzSpec {
  statPrefix: string;
  service: GrpcAuthorizer;
  failureModeAllow: boolean;
  /** `include_peer_certificate`: the peer's certificate goes with the check, URL-encoded PEM. */
  includePeerCertificate: boolean;
}

const EXT_AUTHZ_FIELDS = acting(
  'stat_prefix',
  'grpc_service',
  'failure_mode_allow',
  'transport_api_version',
  'include_peer_certificate',
);

function compile(raw: JsonObject, path: string, report: Report): NetworkExtAuthzSpec {
  checkFields(raw, path, report, EXT_AUTHZ_FIELDS, 'ExtAuthz');
  const statPrefix = typeof raw.stat_prefix === 'string' ? raw.stat_prefix : '';
  if (statPrefix === '') report.error(`${path}.stat_prefix`, 'required field missing', 'missing');
  if (raw.grpc_service === undefined)
    report.error(`${path}.grpc_service`, 'required field missing', 'missing');
  return {
    statPrefix,
    service: compileGrpc(
      objectOf(raw.grpc_service),
      raw.transport_api_version,
      `${path}.grpc_service`,
      report,
    ),
    failureModeAllow: raw.failure_mode_allow === true,
    includePeerCertificate: raw.include_peer_certificate === true,
  };
}

/** `ip:port` of one end of a connection as a `core.Address`. */
function address(ip: string | undefined, port: number | undefined): JsonObject {
  return { socket_address: { address: (ip ?? '').replace(/^::ffff:/, ''), port_value: port ?? 0 } };
}

/**
 * The `CheckRequest` of a connection (the reference's `createTcpCheck`): its two addresses, and
 * the peer's principal (its first URI SAN, else its subject) when it showed a certificate, with
 * the certificate itself (URL-encoded PEM) when `withCertificate`.
 */
export function connectionCheck(socket: net.Socket, withCertificate: boolean): JsonObject {
  const peer = peerIdentitySource(socket)?.get();
  const principal = peer ? (peer.uriSans[0] ?? peer.subject) : '';
  const cert = withCertificate ? (socket as tls.TLSSocket).getPeerX509Certificate?.() : undefined;
  return {
    attributes: {
      source: {
        address: address(socket.remoteAddress, socket.remotePort),
        principal,
        ...(cert ? { certificate: encodeURIComponent(cert.toString()) } : {}),
      },
      destination: { address: address(socket.localAddress, socket.localPort) },
    },
  };
}

/** The filter's counters, under `ext_authz.<stat_prefix>.`, beside its `active` gauge. */
const EXT_AUTHZ_COUNTERS = {
  total: 'total',
  ok: 'ok',
  denied: 'denied',
  error: 'error',
  failureModeAllowed: 'failure_mode_allowed',
  cxClosed: 'cx_closed',
};

const V2 = 'envoy.config.filter.network.ext_authz.v2.ExtAuthz';

/** `envoy.ext_authz` is also the HTTP filter's short name, each in its own category. */
export const networkExtAuthzFactory: ReadFilterFactory<NetworkExtAuthzSpec> = {
  name: 'envoy.filters.network.ext_authz',
  aliases: ['envoy.ext_authz'],
  configType: V2,
  typeAliases: { 'envoy.extensions.filters.network.ext_authz.v3.ExtAuthz': V2 },
  schema: { file: 'envoy/config/filter/network/ext_authz/v2.proto' },
  terminal: false,
  fieldTables: { ExtAuthz: EXT_AUTHZ_FIELDS, ...FILTER_GRPC_SERVICE_TABLES },
  compile,
  start(spec, { ctx, clusters }) {
    const scope = ctx.stats.scope(`ext_authz.${spec.statPrefix}`);
    const stats = { ...scope.counters(EXT_AUTHZ_COUNTERS), active: scope.gauge('active') };
    const service = spec.service;
    const check = (socket: net.Socket, release: () => void) => {
      stats.active.inc();
      // A client gone before the answer: the check is dropped, and its answer never acts.
      const cancel = () => {
        call.cancel();
        stats.active.dec();
      };
      socket.once('close', cancel);
      const call = grpcUnary(
        clusters,
        checkCall(service),
        connectionCheck(socket, spec.includePeerCertificate),
        (result) => {
          socket.off('close', cancel);
          stats.active.dec();
          stats.total.inc();
          const verdict = grpcVerdict(result);
          const allowed = verdict.kind === 'ok' || (verdict.kind === 'error' && spec.failureModeAllow);
          if (verdict.kind === 'ok') stats.ok.inc();
          else if (verdict.kind === 'denied') stats.denied.inc();
          else stats.error.inc();
          if (verdict.kind === 'error' && allowed) stats.failureModeAllowed.inc();
          if (allowed) return release();
          stats.cxClosed.inc();
          socket.destroy();
        },
      );
    };
    return {
      /**
       * As the reference, the check waits for the connection's first bytes (its `onData`), when
       * the check has all it needs (TLS is done, the listener filters ran): the next filters take
       * the connection at once (a TCP proxy connects upstream, whose greeting reaches the client),
       * and only the client's bytes wait for the verdict. A connection reset before it sent
       * anything is never checked (a FIN is checked: it ends the client's data).
       */
      onNewConnection(socket, proceed) {
        const release = holdReads(socket, () => check(socket, release));
        proceed();
      },
    };
  },
};
