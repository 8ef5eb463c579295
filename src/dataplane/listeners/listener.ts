import * as net from 'node:net';
import {
  type Counter,
  type Gauge,
  type Histogram,
  listenerScope,
  type StatsStore,
} from '../../stats/store.js';
import type { NetworkFilterHandler } from '../http/types.js';
import { type CompiledMatch, compileMatch, selectChain } from './chain-match.js';
import type { ListenerSpec } from './config.js';

interface ListenerStats {
  downstream_cx_total: Counter;
  downstream_cx_active: Gauge;
  downstream_cx_destroy: Counter;
  downstream_cx_length_ms: Histogram;
  no_filter_chain_match: Counter;
  server_total_connections: Gauge;
}

function listenerStats(stats: StatsStore, address: string): ListenerStats {
  const s = listenerScope(stats, address);
  return {
    downstream_cx_total: s.counter('downstream_cx_total'),
    downstream_cx_active: s.gauge('downstream_cx_active'),
    downstream_cx_destroy: s.counter('downstream_cx_destroy'),
    downstream_cx_length_ms: s.histogram('downstream_cx_length_ms'),
    no_filter_chain_match: s.counter('no_filter_chain_match'),
    server_total_connections: stats.gauge('server.total_connections'),
  };
}

/**
 * One bound listener: a server socket that hands each accepted connection to the filter
 * chain that matches it. It owns the accepted sockets only until a chain takes them, but
 * keeps counting them until they close.
 */
export class ActiveListener {
  private readonly server: net.Server;
  private readonly matches: CompiledMatch[];
  private readonly stats: ListenerStats;
  private accepting = false;

  constructor(
    readonly spec: ListenerSpec,
    private readonly handlers: NetworkFilterHandler[],
    stats: StatsStore,
  ) {
    this.stats = listenerStats(stats, spec.statAddress);
    this.matches = spec.chains.map((c) => compileMatch(c.match));
    this.server = net.createServer({ allowHalfOpen: true, highWaterMark: spec.bufferLimitBytes }, (socket) =>
      this.accept(socket),
    );
    this.server.on('error', () => {
      // Errors after listening (EMFILE on accept and the like) cost one connection, not the listener.
    });
  }

  /** Binds; resolves to the address actually bound (the real port when the config says 0). */
  listen(): Promise<net.AddressInfo> {
    return new Promise((resolve, reject) => {
      const onError = (err: Error) => reject(err);
      this.server.once('error', onError);
      this.server.listen({ host: this.spec.ip, port: this.spec.port, backlog: this.spec.backlog }, () => {
        this.server.off('error', onError);
        this.accepting = true;
        resolve(this.server.address() as net.AddressInfo);
      });
    });
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

  /** Asks every chain to drain the connections it holds. */
  drain(strategy: 'gradual' | 'immediate', drainTimeMs: number): void {
    for (const h of this.handlers) h.drain(strategy, drainTimeMs);
  }

  /** Stops accepting and closes every connection. */
  async close(): Promise<void> {
    this.stopAccepting();
    await Promise.all(this.handlers.map((h) => h.close()));
  }

  private accept(socket: net.Socket): void {
    const stats = this.stats;
    stats.downstream_cx_total.inc();
    stats.downstream_cx_active.inc();
    stats.server_total_connections.inc();
    const opened = performance.now();
    socket.once('close', () => {
      stats.downstream_cx_active.dec();
      stats.server_total_connections.dec();
      stats.downstream_cx_destroy.inc();
      stats.downstream_cx_length_ms.record(performance.now() - opened);
    });
    const chain = selectChain(this.matches, {
      localAddress: socket.localAddress ?? '',
      localPort: socket.localPort ?? 0,
      remoteAddress: socket.remoteAddress ?? '',
      remotePort: socket.remotePort ?? 0,
    });
    const handler = this.handlers[chain];
    if (!handler) {
      stats.no_filter_chain_match.inc();
      socket.destroy();
      return;
    }
    handler.handle(socket);
  }
}
