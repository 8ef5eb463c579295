import * as net from 'node:net';
import type { ListenerSpec } from '../../config/listener.js';
import type { DownstreamTls } from '../../config/tls-context.js';
import {
  type Counter,
  type Gauge,
  type Histogram,
  listenerScope,
  type StatsStore,
} from '../../stats/store.js';
import { peerFault } from '../codec/peer-guard.js';
import type { NetworkFilterHandler } from '../network-filter.js';
import {
  type CompiledMatch,
  type ConnectionFacts,
  compileMatch,
  needsClientHello,
  selectChain,
} from './chain-match.js';
import type { ConnectionLimits, Overflow } from './limits.js';
import { ListenerTls } from './listener-tls.js';
import { boundHandle, type SocketHelper, socketHelper } from './native.js';
import { isRestored, restoreOriginalDst } from './original-dst.js';
import { peekFirstBytes } from './peek.js';
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
  /** The TLS chains' handshakes; null when every chain is plain text. */
  private readonly tls: ListenerTls | null;
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
    this.tls = spec.chains.some((c) => c.tls)
      ? new ListenerTls(spec, handlers, listenerScope(stats, spec.statAddress))
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

  /** Where the server socket is bound (the real port when the config said 0). */
  get address(): net.AddressInfo {
    return this.server.address() as net.AddressInfo;
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

  /** A new connection: a throw while taking it closes it alone (src/dataplane/codec/peer-guard.ts). */
  private accept(socket: net.Socket): void {
    try {
      this.take(socket);
    } catch (err) {
      peerFault(err, 'listener accept', socket);
    }
  }

  private take(socket: net.Socket): void {
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
    const exempt = this.spec.ignoreGlobalLimit;
    const overflow = this.limits.admit(name, exempt);
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
      this.limits.release(name, exempt);
      stats.downstream_cx_active.dec();
      stats.server_total_connections.dec();
      stats.downstream_cx_destroy.inc();
      stats.downstream_cx_length_ms.record(performance.now() - opened);
    });
    if (this.inspect)
      peekFirstBytes(socket, this.spec, (transportProtocol, serverName, alpn) =>
        this.dispatch(socket, transportProtocol, serverName, alpn),
      );
    else this.dispatch(socket, 'raw_buffer', '', []);
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
    if (!this.tls?.handshake(socket, chain, facts)) {
      // Bytes put back by a peek flow again once the chain reads (or pauses) the socket.
      socket.resume();
      handler.handle(socket);
    }
  }

  /** Chain `chain` compiled again with rotated secrets (ListenerTls.update). */
  updateTls(chain: number, ctx: DownstreamTls): void {
    this.tls?.update(chain, ctx);
  }
}
