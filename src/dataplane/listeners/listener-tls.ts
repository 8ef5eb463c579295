import type * as net from 'node:net';
import * as tls from 'node:tls';
import type { ListenerSpec } from '../../config/listener.js';
import type { DownstreamTls } from '../../config/tls-context.js';
import type { Counter, Scope } from '../../stats/store.js';
import { checkPeer } from '../../tls/peer-check.js';
import { countFailure, countHandshake, type SslStats, sslStats } from '../../tls/stats.js';
import { peerFault } from '../codec/peer-guard.js';
import type { NetworkFilterHandler } from '../network-filter.js';
import type { ConnectionFacts } from './chain-match.js';
import { isRestored, restoreAs } from './original-dst.js';
import { peekFirstBytes } from './peek.js';

/** Node's own bound on a TLS handshake. */
const TLS_HANDSHAKE_TIMEOUT_MS = 120_000;

/** A chain's TLS handshake deadline: its connections' idle limit when that is sooner. */
function handshakeTimeoutMs(idleMs: number): number {
  return idleMs > 0 ? Math.min(idleMs, TLS_HANDSHAKE_TIMEOUT_MS) : TLS_HANDSHAKE_TIMEOUT_MS;
}

/** A connection's peer `ip:port`: unique among the connections of one listening socket. */
function peerKey(socket: net.Socket): string {
  return `${socket.remoteAddress}:${socket.remotePort}`;
}

/**
 * The TLS side of a listener with a TLS chain: per such chain a TLS server that never
 * listens; it handshakes the sockets handed to it and gives each to the chain once the peer
 * passed the context's checks. Its `listener.<address>.ssl.*` stats exist only for such a
 * listener, as in the reference.
 */
export class ListenerTls {
  /** Per chain: the TLS server that handshakes its connections, or null for plain text. */
  private readonly servers: Array<tls.Server | null>;
  /**
   * Per chain with `alpn_protocols`: a server offering no ALPN, for a client whose list shares
   * none of them. The reference's selection then goes on without ALPN (BoringSSL's NOACK);
   * Node's answers such a client with a fatal `no_application_protocol` alert, and its ALPN
   * callback can do nothing else, so the choice is made before the handshake, from the hello.
   */
  private readonly bare: Array<tls.Server | null>;
  /** Per chain: its TLS context now (a rotated secret replaces it for new handshakes). */
  private readonly contexts: Array<DownstreamTls | null>;
  /** `listener.<address>.server_ssl_socket_factory.downstream_context_secrets_not_ready`. */
  private readonly secretsNotReady: Counter;
  /** Connections whose destination was restored, by peer, until their handshake ends. */
  private readonly restored = new Map<string, { ip: string; port: number }>();

  constructor(
    spec: ListenerSpec,
    private readonly handlers: NetworkFilterHandler[],
    scope: Scope,
  ) {
    const ssl = sslStats(scope);
    this.contexts = spec.chains.map((c) => c.tls);
    this.servers = spec.chains.map((c, i) => (c.tls ? this.server(c.tls, i, ssl, true) : null));
    this.bare = spec.chains.map((c, i) =>
      c.tls && c.tls.alpn.length > 0 ? this.server(c.tls, i, ssl, false) : null,
    );
    this.secretsNotReady = scope.counter('server_ssl_socket_factory.downstream_context_secrets_not_ready');
  }

  /**
   * Hands `socket`, matched to `chain` by `facts`, to that chain's handshake; false when the
   * chain is plain text.
   */
  handshake(socket: net.Socket, chain: number, facts: ConnectionFacts): boolean {
    const server = this.servers[chain];
    if (!server) return false;
    if (this.contexts[chain]?.pending.length) {
      // No handshake without the secrets SDS has yet to send (the reference's NotReadySslSocket).
      this.secretsNotReady.inc();
      socket.destroy();
      return true;
    }
    // The TLS socket takes this setting over: during the handshake a peer's FIN (a TCP
    // probe) closes it, where half-open it would wait for a ClientHello that never comes.
    // `secured` gives the chain its half-closes back.
    socket.allowHalfOpen = false;
    if (this.bare[chain] && facts.transportProtocol !== 'tls') {
      // Not peeked yet: the hello's ALPN list picks the server, within the handshake's deadline.
      const spec = {
        inspectTimeoutMs: handshakeTimeoutMs(this.handlers[chain]?.connectionIdleMs ?? 0),
        continueOnInspectTimeout: false,
        httpInspector: false,
      };
      peekFirstBytes(socket, spec, (transportProtocol, serverName, alpn) =>
        this.begin(socket, chain, { ...facts, transportProtocol, serverName, applicationProtocols: alpn }),
      );
      return true;
    }
    this.begin(socket, chain, facts);
    return true;
  }

  /** Starts the handshake: on the chain's bare server when the client's ALPN list shares nothing with the chain's. */
  private begin(socket: net.Socket, chain: number, facts: ConnectionFacts): void {
    const offered = facts.applicationProtocols;
    const ours = this.contexts[chain]?.alpn ?? [];
    const bare = this.bare[chain];
    const server =
      bare && offered.length > 0 && !offered.some((p) => ours.includes(p)) ? bare : this.servers[chain];
    // The TLS socket reads its addresses from the kernel: it is given the restored one once secured.
    if (isRestored(socket)) {
      const key = peerKey(socket);
      this.restored.set(key, { ip: facts.localAddress, port: facts.localPort });
      socket.once('close', () => this.restored.delete(key));
    }
    server?.emit('connection', socket);
  }

  /**
   * Chain `chain` compiled again with rotated secrets: new handshakes use its certificates
   * and checks, established connections carry on with theirs.
   */
  update(chain: number, ctx: DownstreamTls): void {
    const server = this.servers[chain];
    if (!server || this.contexts[chain] === ctx) return;
    this.contexts[chain] = ctx;
    if (ctx.pending.length === 0) {
      server.setSecureContext(ctx.secure);
      this.bare[chain]?.setSecureContext(ctx.secure);
    }
  }

  private server(ctx: DownstreamTls, chain: number, ssl: SslStats, alpn: boolean): tls.Server {
    const server = tls.createServer(
      {
        ...ctx.secure,
        ...(alpn && ctx.alpn.length > 0 ? { ALPNProtocols: ctx.alpn } : {}),
        // A client certificate is asked for when there is something to check it against.
        requestCert: ctx.hasValidation || ctx.requireClientCertificate,
        rejectUnauthorized: false,
        handshakeTimeout: handshakeTimeoutMs(this.handlers[chain]?.connectionIdleMs ?? 0),
      },
      (socket) => {
        try {
          this.secured(socket, this.contexts[chain] ?? ctx, chain, ssl);
        } catch (err) {
          peerFault(err, 'tls handshake', socket);
        }
      },
    );
    server.on('tlsClientError', (err: NodeJS.ErrnoException, socket) => {
      // A peer gone before its handshake finished (a TCP probe) failed no handshake.
      if (err.code !== 'ECONNRESET') ssl.connection_error.inc();
      socket.destroy();
    });
    return server;
  }

  private secured(socket: tls.TLSSocket, ctx: DownstreamTls, chain: number, ssl: SslStats): void {
    socket.allowHalfOpen = true;
    const restored = this.restored.get(peerKey(socket));
    if (restored) {
      this.restored.delete(peerKey(socket));
      restoreAs(socket, restored.ip, restored.port);
    }
    const failure = checkPeer(socket, ctx.peer, ctx.requireClientCertificate);
    if (failure || (ctx.requireSni && !socket.servername)) {
      if (failure) countFailure(ssl, failure);
      else ssl.connection_error.inc();
      socket.destroy();
      return;
    }
    countHandshake(ssl, {
      reused: socket.isSessionReused(),
      version: socket.getProtocol(),
      cipher: socket.getCipher()?.name,
      peerCert: socket.getPeerX509Certificate() !== undefined,
    });
    this.handlers[chain]?.handle(socket);
  }
}
