/**
 * The statsd and DogStatsD sinks: at each flush the lines of src/stats/sinks/statsd-lines.ts
 * go out as UDP datagrams to `address`, or over one TCP connection to a member of
 * `tcp_cluster_name`, newline-terminated, as the reference's TCP statsd sink writes them.
 */
import { createSocket, type Socket as UdpSocket } from 'node:dgram';
import { isIPv6, Socket } from 'node:net';
import type { State } from '../../../reducers/index.js';
import { entryOf } from '../../../reducers/names.js';
import type { StatsdSinkSpec } from '../../config/stats-sinks.js';
import type { Counter } from '../store.js';
import type { TagProducer } from '../tags.js';
import type { MetricSnapshot, StatsSink } from './snapshot.js';
import { datagrams, LineMaker } from './statsd-lines.js';

/**
 * What a TCP sink may leave unsent before it gives the connection up (the peer reads too
 * slowly or not at all): the reference's limit, past which it closes the connection, drops
 * the flush and counts `statsd.cx_overflow`.
 */
export const MAX_BUFFERED_BYTES = 16 * 1024 * 1024;

/** What a statsd sink is given besides its config. */
export interface StatsdSinkHost {
  tags: TagProducer;
  /** The snapshot, for the members of a TCP sink's cluster. */
  state: () => State;
  /** A counter of the server's stats (a TCP sink's `statsd.cx_overflow`, made with the sink). */
  counter: (name: string) => Counter;
  warn: (message: string) => void;
}

class UdpSink implements StatsSink {
  private readonly socket: UdpSocket;
  /** A send failed and no later one went: the fault was logged once, not per datagram. */
  private failing = false;
  private readonly sent: (err: Error | null) => void;

  constructor(
    private readonly target: { ip: string; port: number },
    private readonly lines: LineMaker,
    private readonly maxBytes: number,
    warn: (message: string) => void,
  ) {
    this.socket = createSocket(isIPv6(target.ip) ? 'udp6' : 'udp4');
    // A send that fails (no route, a full buffer) loses its stats, as UDP may; it never throws.
    this.sent = (err) => {
      if (err && !this.failing) warn(`statsd sink to ${target.ip}:${target.port}: ${err.message}`);
      this.failing = err !== null;
    };
    this.socket.on('error', this.sent);
    this.socket.unref();
  }

  flush(snapshot: MetricSnapshot): void {
    for (const datagram of datagrams(this.lines.lines(snapshot), this.maxBytes))
      this.socket.send(datagram, this.target.port, this.target.ip, this.sent);
  }

  close(): void {
    this.socket.close();
  }
}

class TcpSink implements StatsSink {
  private socket: Socket | null = null;
  /** Which member of the cluster to dial next. */
  private pick = 0;
  private readonly overflow: Counter;

  constructor(
    private readonly cluster: string,
    private readonly lines: LineMaker,
    private readonly host: StatsdSinkHost,
  ) {
    this.overflow = host.counter('statsd.cx_overflow');
  }

  flush(snapshot: MetricSnapshot): void {
    const socket = this.socket ?? this.connect();
    if (!socket) return;
    if (socket.writableLength > MAX_BUFFERED_BYTES) {
      this.overflow.inc();
      this.host.warn(`statsd sink to cluster '${this.cluster}': the peer is not reading; connection closed`);
      this.drop(socket);
      return;
    }
    const lines = this.lines.lines(snapshot);
    if (lines.length > 0) socket.write(`${lines.join('\n')}\n`);
  }

  /** A connection to the next member; none when the cluster has no member (the flush is dropped). */
  private connect(): Socket | null {
    const hosts = entryOf(this.host.state().clusters, this.cluster)?.hosts ?? [];
    const member = hosts[this.pick++ % Math.max(1, hosts.length)];
    if (!member) return null;
    const socket = new Socket();
    socket.on('error', (err) => {
      this.host.warn(`statsd sink to cluster '${this.cluster}' (${member.address}): ${err.message}`);
      this.drop(socket);
    });
    socket.on('close', () => this.drop(socket));
    socket.connect(member.pipe ? { path: member.ip } : { host: member.ip, port: member.port });
    socket.unref();
    this.socket = socket;
    return socket;
  }

  private drop(socket: Socket): void {
    if (this.socket === socket) this.socket = null;
    socket.destroy();
  }

  close(): void {
    if (this.socket) this.drop(this.socket);
  }
}

/** A statsd or DogStatsD sink as its spec says. */
export function statsdSink(spec: StatsdSinkSpec, host: StatsdSinkHost): StatsSink {
  const lines = new LineMaker({ prefix: spec.prefix, tags: spec.tagged ? host.tags : null });
  return spec.target.kind === 'udp'
    ? new UdpSink(spec.target, lines, spec.maxDatagramBytes, host.warn)
    : new TcpSink(spec.target.cluster, lines, host);
}
