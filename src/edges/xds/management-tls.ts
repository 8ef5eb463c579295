/**
 * TLS (and mTLS) to a management server: the `transport_socket` of the cluster an xDS or load
 * reporting source names, compiled by the same step as any cluster's (static certificates,
 * static secrets, secrets from SDS) and checked after each handshake as the data plane checks
 * its upstreams (`checkPeer`): chain, SAN matchers, pins. grpc-js would verify a peer its own
 * way (host name checks the reference does not make, and an IP target as SNI, which Node
 * refuses), so the streams hand it connections secured here.
 */
import type * as net from 'node:net';
import * as tls from 'node:tls';
import { entryOf, type State } from '../../../reducers/index.js';
import { clusterStatName } from '../../../reducers/settings/cluster.js';
import { compiledCluster } from '../../config/cluster.js';
import { clusterTls } from '../../config/cluster-tls.js';
import { secretsOf } from '../../config/secrets.js';
import type { UpstreamTls } from '../../config/tls-context.js';
import type { KeepaliveOptions } from '../../dataplane/codec/h2/keepalive.js';
import type { StatsStore } from '../../stats/store.js';
import { checkPeer } from '../../tls/peer-check.js';
import { countFailure, countHandshake, type SslStats, sslStats } from '../../tls/stats.js';

/**
 * How a management server is dialled: plain text (`tls: null`) or TLS, with the cluster's
 * HTTP/2 `connection_keepalive` (null: none); or not at all (why).
 */
export type ManagementSecurity =
  | { tls: ManagementTls | null; keepalive: KeepaliveOptions | null }
  | { error: string };

/** A management cluster's TLS context and the `ssl.` counters of its scope. */
export interface ManagementTls {
  context: UpstreamTls;
  stats: SslStats;
}

/**
 * The TLS of management cluster `name` in `state`: its context as the secrets of the moment
 * make it; an error while a secret it names has not been discovered or does not compile.
 */
export function managementSecurity(state: State, stats: StatsStore, name: string): ManagementSecurity {
  const entry = entryOf(state.clusters, name);
  if (!entry) return { tls: null, keepalive: null };
  const keepalive = compiledCluster(entry.config).connection.http2.keepalive;
  const { tls: context, errors } = clusterTls(entry.config, secretsOf(state));
  if (errors.length > 0) return { error: `the TLS context of cluster '${name}': ${errors.join('; ')}` };
  if (!context) return { tls: null, keepalive };
  if (context.pending.length > 0)
    return { error: `TLS secrets not ready (waiting for SDS: ${context.pending.join(', ')})` };
  const scope = stats.scope(`cluster.${clusterStatName(entry.config)}`);
  return { tls: { context, stats: sslStats(scope) }, keepalive };
}

/**
 * A TLS handshake over `socket` (connected) offering `protocol` (`h2` for gRPC, `http/1.1`
 * for REST), then the peer checks of the context: the secured socket, or an error naming what
 * failed. The peer is refused before a byte of the stream (the node, a token in
 * `initial_metadata`) is written to it.
 */
export function secureSocket(
  socket: net.Socket,
  management: ManagementTls,
  protocol: 'h2' | 'http/1.1',
): Promise<tls.TLSSocket> {
  const { context, stats } = management;
  return new Promise((resolve, reject) => {
    const secured = tls.connect({
      socket,
      secureContext: context.context,
      ...(context.serverName ? { servername: context.serverName } : {}),
      ALPNProtocols: [protocol],
      // Verification is checkPeer's: the chain only when trusted_ca is set, never the host name.
      rejectUnauthorized: false,
      checkServerIdentity: () => undefined,
    });
    let settled = false;
    const fail = (error: Error) => {
      settled = true;
      secured.destroy();
      reject(error);
    };
    // Kept once secured: an error before grpc-js listens on the socket must not go unheard.
    secured.on('error', (err) => {
      if (settled) return;
      stats.connection_error.inc();
      fail(new Error(`TLS handshake failed: ${err.message}`));
    });
    secured.once('secureConnect', () => {
      const failure = checkPeer(secured, context.peer, false);
      if (failure) {
        countFailure(stats, failure);
        const detail = failure === 'fail_verify_error' ? `: ${String(secured.authorizationError)}` : '';
        fail(new Error(`the management server's certificate was refused (${failure}${detail})`));
        return;
      }
      countHandshake(stats, {
        reused: secured.isSessionReused(),
        version: secured.getProtocol(),
        cipher: secured.getCipher()?.name,
        peerCert: true,
        curve: (secured.getEphemeralKeyInfo() as { name?: string } | null)?.name,
      });
      settled = true;
      resolve(secured);
    });
  });
}
