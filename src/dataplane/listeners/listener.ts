import * as net from 'node:net';
import * as tls from 'node:tls';
import type { ListenerSpec } from '../../config/listener.js';
import type { DownstreamTls } from '../../config/tls-context.js';
import {
  type Counter,
  type Gauge,
  type Histogram,
  listenerScope,
  type StatsStore,
} from '../../stats/store.js';
import { ClientHelloReader } from '../../tls/client-hello.js';
import { checkPeer } from '../../tls/peer-check.js';
import { countFailure, countHandshake, type SslStats, sslStats } from '../../tls/stats.js';
import type { NetworkFilterHandler } from '../network-filter.js';
import {
  type CompiledMatch,
  type ConnectionFacts,
  compileMatch,
  needsClientHello,
  selectChain,
} from './chain-match.js';
import { sniffHttp } from './http-sniff.js';
import type { ConnectionLimits, Overflow } from './limits.js';
import { boundHandle, type SocketHelper, socketHelper } from './native.js';
import { isRestored, restoreAs, restoreOriginalDst } from './original-dst.js';
import { recordServerName } from './server-name.js';
import type { ListenSockets } from './sockets.js';

type ListenerStats = {
  downstream_cx_total: Counter;
  downstream_cx_active: Gauge;
  downstream_cx_destroy: Counter;
  downstream_cx_length_ms: Histogram;
  no_filter_chain_match: Counter;
  server_total_connections: Gauge;
} & Record<Overflow, Counter>;

/** A connection's peer `ip:port`: unique among the connections of one listening socket. */
function peerKey(socket: net.Socket): string {
  return `${socket.remoteAddress}:${socket.remotePort}`;
}

function listenerStats(stats: StatsStore, address: string): ListenerStats {
  const s = listenerScope(stats, address);
  return {
    downstream_cx_total: s.counter('downstream_cx_total'),
    downstream_cx_active: s.gauge('downstream_cx_active'),
    downstream_cx_destroy: s.counter('downstream_cx_destroy'),
    downstream_cx_length_ms: s.histogram('downstream_cx_length_ms'),
    no_filter_chain_match: s.counter('no_filter_chain_match'),
    downstream_cx_overflow: s.counter('downstream_cx_overflow'),
    downstream_global_cx_overflow: s.counter('downstream_global_cx_overflow'),
    server_total_connections: stats.gauge('server.total_connections'),
  };
}

/**
 * One bound listener: a server socket that hands each accepted connection to the filter
 * chain that matches it. It owns the accepted sockets only until a chain takes them, but
 * keeps counting them until they close.
 */
export class ActiveListener {
  private server: net.Server;
  private readonly matches: CompiledMatch[];
  private readonly stats: ListenerStats;
  /** Some chain matches on SNI, ALPN or transport: connections are peeked before choosing. */
  private readonly inspect: boolean;
  /** Per chain: the TLS server that handshakes its connections, or null for plain text. */
  private readonly tlsServers: Array<tls.Server | null>;
  /** Per chain: its TLS context now (a rotated secret replaces it for new handshakes). */
  private readonly chainTls: Array<DownstreamTls | null>;
  /** `listener.<address>.server_ssl_socket_factory.downstream_context_secrets_not_ready`. */
  private readonly secretsNotReady: Counter | null;
  private accepting = false;
  /** Accepted sockets still open: some may sit in a ClientHello peek or a handshake, owned by no chain yet. */
  private readonly open = new Set<net.Socket>();
  /**
   * While the overload action stop_accepting_connections is active: connections that arrived,
   * held unread and uncounted as if still in the kernel's backlog (node:net cannot stop
   * accepting without closing the listening socket), taken in order once it is off.
   */
  private held: Map<net.Socket, () => void> | null = null;
  /**
   * `use_original_dst`: the listener bound at a restored destination, which takes the
   * connection instead (null: none, this one keeps it).
   */
  handOff: ((ip: string, port: number) => ActiveListener | null) | null = null;
  /** TLS chains' connections whose destination was restored, by peer, until their handshake ends. */
  private readonly restoredTls = new Map<string, { ip: string; port: number }>();
  private markClosed: () => void = () => {};
  /** Resolves once `close` has closed every connection. */
  readonly closed = new Promise<void>((resolve) => {
    this.markClosed = resolve;
  });

  constructor(
    readonly spec: ListenerSpec,
    private readonly handlers: NetworkFilterHandler[],
    stats: StatsStore,
    private readonly limits: ConnectionLimits,
  ) {
    this.stats = listenerStats(stats, spec.statAddress);
    this.matches = spec.chains.map((c) => compileMatch(c.match));
    this.inspect = spec.tlsInspector || spec.httpInspector || needsClientHello(this.matches);
    // `listener.<address>.ssl.*` exist only for a listener with a TLS chain, as in the reference.
    const ssl = spec.chains.some((c) => c.tls) ? sslStats(listenerScope(stats, spec.statAddress)) : null;
    this.chainTls = spec.chains.map((c) => c.tls);
    this.tlsServers = spec.chains.map((c, i) => (c.tls && ssl ? this.tlsServer(c.tls, i, ssl) : null));
    this.secretsNotReady = ssl
      ? listenerScope(stats, spec.statAddress).counter(
          'server_ssl_socket_factory.downstream_context_secrets_not_ready',
        )
      : null;
    this.server = net.createServer({ allowHalfOpen: true, highWaterMark: spec.bufferLimitBytes }, (socket) =>
      this.accept(socket),
    );
    this.server.on('error', () => {
      // Errors after listening (EMFILE on accept and the like) cost one connection, not the listener.
    });
  }

  /**
   * Binds `port` (the configured one, or the one the other workers bound for a port-0
   * listener), or accepts on `inherited` (a hot-restart parent's socket for the same address);
   * resolves to the address actually bound (the real port when binding 0). The socket is
   * bound with `SO_REUSEPORT`: every worker thread binds the address, the kernel spreads the
   * connections over them, and a hot-restart epoch binds beside the one it replaces.
   */
  listen(inherited: object | null = null, port = this.spec.port): Promise<net.AddressInfo> {
    return new Promise((resolve, reject) => {
      const onError = (err: Error) => reject(err);
      const onListening = () => {
        this.server.off('error', onError);
        this.accepting = true;
        resolve(this.server.address() as net.AddressInfo);
      };
      this.server.once('error', onError);
      if (inherited) this.server.listen(inherited, onListening);
      else if (this.spec.transparent || this.spec.freebind) {
        try {
          this.server.listen(this.nativeSocket(), this.spec.backlog, onListening);
        } catch (err) {
          onError(err as Error);
        }
      } else
        this.server.listen(
          { host: this.spec.ip, port, backlog: this.spec.backlog, reusePort: true },
          onListening,
        );
    });
  }

  /**
   * A socket bound by the native helper with IP_TRANSPARENT or IP_FREEBIND, which must be set
   * before bind(). Each worker binds its own, so SO_REUSEPORT lets them share the address.
   */
  private nativeSocket(): object {
    const spec = this.spec;
    const fd = (socketHelper() as SocketHelper).bindSocket(
      spec.ip,
      spec.port,
      spec.transparent,
      spec.freebind,
      true,
    );
    return boundHandle(fd);
  }

  /** Offers the bound socket to the next hot-restart epoch (it follows a takeover: same server). */
  offerTo(sockets: ListenSockets, address: string): void {
    sockets.offer(address, this.server);
  }

  get isAccepting(): boolean {
    return this.accepting;
  }

  /** Closes the server socket: new connections are refused; accepted ones go on. */
  stopAccepting(): void {
    if (!this.accepting) return;
    this.accepting = false;
    this.server.close();
  }

  /** Holds new connections (`true`) or takes the held ones and every new one again (`false`). */
  pauseAccepting(paused: boolean): void {
    if (paused) {
      this.held ??= new Map();
      return;
    }
    const held = this.held;
    this.held = null;
    for (const [socket, unwatch] of held ?? []) {
      unwatch();
      if (!socket.destroyed) this.accept(socket);
    }
  }

  /** Keeps `socket` until `pauseAccepting(false)`; one that errs or closes meanwhile is dropped. */
  private hold(held: Map<net.Socket, () => void>, socket: net.Socket): void {
    const onError = () => socket.destroy();
    const onClose = () => held.delete(socket);
    socket.on('error', onError);
    socket.once('close', onClose);
    held.set(socket, () => {
      socket.off('error', onError);
      socket.off('close', onClose);
    });
  }

  /** Asks every chain to drain the connections it holds. */
  drain(strategy: 'gradual' | 'immediate', drainTimeMs: number): void {
    for (const h of this.handlers) h.drain(strategy, drainTimeMs);
  }

  /** Stops accepting and closes every connection. */
  async close(): Promise<void> {
    this.stopAccepting();
    await Promise.all(this.handlers.map((h) => h.close()));
    for (const socket of this.open) socket.destroy();
    for (const socket of this.held?.keys() ?? []) socket.destroy();
    this.markClosed();
  }

  /**
   * Takes over the bound socket of `previous` (the same listener before a config change):
   * from now on its new connections come here, with no moment where they are refused.
   */
  takeOver(previous: ActiveListener): void {
    this.server = previous.handOver((socket) => this.accept(socket));
    this.accepting = true;
  }

  private handOver(accept: (socket: net.Socket) => void): net.Server {
    this.accepting = false;
    this.server.removeAllListeners('connection');
    this.server.on('connection', accept);
    return this.server;
  }

  private accept(socket: net.Socket): void {
    // A connection handed off by another listener was restored there.
    if (this.spec.restoreOriginalDst && !isRestored(socket)) {
      const target = restoreOriginalDst(socket);
      if (target && this.spec.handOffToOriginalDst) {
        const other = this.handOff?.(target.ip, target.port);
        if (other && other !== this) {
          other.accept(socket);
          return;
        }
      }
    }
    if (this.held) {
      this.hold(this.held, socket);
      return;
    }
    const stats = this.stats;
    const name = this.spec.name;
    const overflow = this.limits.admit(name);
    if (overflow) {
      // Closed at once, before any listener filter or chain sees it, and not counted as a connection.
      stats[overflow].inc();
      socket.destroy();
      return;
    }
    stats.downstream_cx_total.inc();
    stats.downstream_cx_active.inc();
    stats.server_total_connections.inc();
    const opened = performance.now();
    this.open.add(socket);
    socket.once('close', () => {
      this.open.delete(socket);
      this.limits.release(name);
      stats.downstream_cx_active.dec();
      stats.server_total_connections.dec();
      stats.downstream_cx_destroy.inc();
      stats.downstream_cx_length_ms.record(performance.now() - opened);
    });
    if (this.inspect) this.peek(socket);
    else this.dispatch(socket, 'raw_buffer', '', []);
  }

  /**
   * Reads the first bytes until they show a whole ClientHello or plain text, as the
   * reference's TLS inspector (inserted by itself when a chain matches on what it finds), and
   * with the HTTP inspector a plain-text request's first line, then puts them back for whoever
   * reads the socket next.
   */
  private peek(socket: net.Socket): void {
    const reader = new ClientHelloReader();
    const chunks: Buffer[] = [];
    const settle = (transportProtocol: string, serverName: string, alpn: string[]) => {
      if (timer) clearTimeout(timer);
      socket.off('data', onData);
      socket.off('close', onClose);
      socket.off('end', onEnd);
      socket.pause();
      socket.unshift(Buffer.concat(chunks));
      this.dispatch(socket, transportProtocol, serverName, alpn);
    };
    const ms = this.spec.inspectTimeoutMs;
    const timer =
      ms > 0
        ? setTimeout(() => {
            if (this.spec.continueOnInspectTimeout) settle('raw_buffer', '', []);
            else socket.destroy();
          }, ms)
        : null;
    const onClose = () => {
      if (timer) clearTimeout(timer);
    };
    // Plain text, with the HTTP inspector: read on to the first line for its HTTP version.
    let sniffing = false;
    const sniff = () => {
      const found = sniffHttp(Buffer.concat(chunks));
      if (found.kind === 'done') settle('raw_buffer', '', found.protocols);
    };
    const onData = (chunk: Buffer) => {
      chunks.push(chunk);
      if (sniffing) return sniff();
      const scan = reader.push(chunk);
      if (scan.kind === 'plain' && this.spec.httpInspector) {
        sniffing = true;
        sniff();
      } else if (scan.kind === 'plain') settle('raw_buffer', '', []);
      else if (scan.kind === 'tls') settle('tls', scan.serverName, scan.alpn);
    };
    // A peer that closes before its ClientHello (a TCP probe) has nothing to hand on.
    const onEnd = () => socket.destroy();
    socket.on('data', onData);
    socket.on('close', onClose);
    socket.on('end', onEnd);
    socket.on('error', () => {});
  }

  private dispatch(socket: net.Socket, transportProtocol: string, serverName: string, alpn: string[]): void {
    const facts: ConnectionFacts = {
      localAddress: socket.localAddress ?? '',
      localPort: socket.localPort ?? 0,
      remoteAddress: socket.remoteAddress ?? '',
      remotePort: socket.remotePort ?? 0,
      transportProtocol,
      serverName,
      applicationProtocols: alpn,
    };
    if (serverName !== '') recordServerName(socket, serverName);
    const chain = selectChain(this.matches, facts);
    const handler = this.handlers[chain];
    if (!handler) {
      this.stats.no_filter_chain_match.inc();
      socket.destroy();
      return;
    }
    const server = this.tlsServers[chain];
    if (server && this.chainTls[chain]?.pending.length) {
      // No handshake without the secrets SDS has yet to send (the reference's NotReadySslSocket).
      this.secretsNotReady?.inc();
      socket.destroy();
    } else if (server) {
      // The TLS socket takes this setting over: during the handshake a peer's FIN (a TCP
      // probe) closes it, where half-open it would wait for a ClientHello that never comes.
      // `secured` gives the chain its half-closes back.
      socket.allowHalfOpen = false;
      // The TLS socket reads its addresses from the kernel: it is given the restored one once secured.
      if (isRestored(socket)) {
        const key = peerKey(socket);
        this.restoredTls.set(key, { ip: facts.localAddress, port: facts.localPort });
        socket.once('close', () => this.restoredTls.delete(key));
      }
      server.emit('connection', socket);
    } else {
      // Bytes put back by a peek flow again once the chain reads (or pauses) the socket.
      socket.resume();
      handler.handle(socket);
    }
  }

  /**
   * A chain's TLS server: never listening, it handshakes the sockets handed to it and gives
   * each to the chain once the peer passed the context's checks.
   */
  /**
   * Chain `chain` compiled again with rotated secrets: new handshakes use its certificates
   * and checks, established connections carry on with theirs.
   */
  updateTls(chain: number, ctx: DownstreamTls): void {
    const server = this.tlsServers[chain];
    if (!server || this.chainTls[chain] === ctx) return;
    this.chainTls[chain] = ctx;
    if (ctx.pending.length === 0) server.setSecureContext(ctx.secure);
  }

  private tlsServer(ctx: DownstreamTls, chain: number, ssl: SslStats): tls.Server {
    const server = tls.createServer(
      {
        ...ctx.secure,
        ...(ctx.alpn.length > 0 ? { ALPNProtocols: ctx.alpn } : {}),
        // A client certificate is asked for when there is something to check it against.
        requestCert: ctx.hasValidation || ctx.requireClientCertificate,
        rejectUnauthorized: false,
        handshakeTimeout: handshakeTimeoutMs(this.handlers[chain]?.connectionIdleMs ?? 0),
      },
      (socket) => this.secured(socket, this.chainTls[chain] ?? ctx, chain, ssl),
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
    const restored = this.restoredTls.get(peerKey(socket));
    if (restored) {
      this.restoredTls.delete(peerKey(socket));
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

/** Node's own bound on a TLS handshake. */
const TLS_HANDSHAKE_TIMEOUT_MS = 120_000;

/** A chain's TLS handshake deadline: its connections' idle limit when that is sooner. */
function handshakeTimeoutMs(idleMs: number): number {
  return idleMs > 0 ? Math.min(idleMs, TLS_HANDSHAKE_TIMEOUT_MS) : TLS_HANDSHAKE_TIMEOUT_MS;
}
