/**
 * `connection_keepalive` (the reference's KeepaliveSettings) of one HTTP/2 session: a PING
 * every `interval` (plus up to `jitter` of it, drawn anew each time), the connection closed
 * when no ACK comes within `timeout`, a wait any frame from the peer extends (a busy connection
 * is alive, whatever queues the ACK behind); and with `idleInterval`, a PING ahead of a new
 * stream on a connection the peer has said nothing on for that long, so a dead one is found
 * quickly. One PING at a time: an idle-stream PING is not sent while one waits for its ACK.
 */
import type * as net from 'node:net';
import { type FrameWriter, TYPE } from './frames.js';

export interface KeepaliveOptions {
  /** 0: no interval PINGs. */
  intervalMs: number;
  timeoutMs: number;
  /** A fraction of the interval (the reference's default, 15 %, is 0.15). */
  jitter: number;
  /** 0: no PING ahead of a stream on an idle connection. */
  idleIntervalMs: number;
}

/** What the keepalive needs of its session (a `Connection`). */
export interface PingHost {
  readonly dead: boolean;
  readonly socket: net.Socket;
  readonly writer: FrameWriter;
  readonly events: { onKeepaliveTimeout?(): void };
  /** Counts a control frame about to be queued; false when that is a flood (the connection ends). */
  queued(control: boolean): boolean;
  markDirty(): void;
}

export class Keepalive {
  private intervalTimer: NodeJS.Timeout | null = null;
  private timeoutTimer: NodeJS.Timeout | null = null;
  /** The payload of the PING waiting for its ACK; null when none waits. */
  private outstanding: Buffer | null = null;
  private lastReadAt = performance.now();
  private sent = 0;
  private stopped = false;

  constructor(
    private readonly options: KeepaliveOptions,
    private readonly host: PingHost,
  ) {
    host.socket.once('close', () => this.stop());
    this.schedule();
  }

  /** Bytes came from the peer. */
  read(): void {
    this.lastReadAt = performance.now();
  }

  /** A PING ACK came: the one we wait for ends the wait and the next interval starts. */
  ack(payload: Buffer): void {
    if (this.outstanding === null || !payload.equals(this.outstanding)) return;
    this.outstanding = null;
    if (this.timeoutTimer) clearTimeout(this.timeoutTimer);
    this.timeoutTimer = null;
    this.schedule();
  }

  /** A new stream is about to open: a PING first when the peer has been silent `idleInterval`. */
  beforeStream(): void {
    const idle = this.options.idleIntervalMs;
    if (idle > 0 && this.outstanding === null && performance.now() - this.lastReadAt >= idle) this.ping();
  }

  stop(): void {
    this.stopped = true;
    if (this.intervalTimer) clearTimeout(this.intervalTimer);
    if (this.timeoutTimer) clearTimeout(this.timeoutTimer);
    this.intervalTimer = null;
    this.timeoutTimer = null;
  }

  private schedule(): void {
    const { intervalMs, jitter } = this.options;
    if (this.stopped || intervalMs <= 0) return;
    if (this.intervalTimer) clearTimeout(this.intervalTimer);
    const delay = intervalMs + Math.random() * intervalMs * jitter;
    this.intervalTimer = setTimeout(() => {
      this.intervalTimer = null;
      this.ping();
    }, delay);
    this.intervalTimer.unref();
  }

  private ping(): void {
    if (this.stopped || this.outstanding !== null) return;
    const payload = Buffer.alloc(8);
    this.sent += 1;
    payload.writeUInt32BE(this.sent, 4);
    const host = this.host;
    if (host.dead || !host.queued(true)) return;
    host.writer.header(8, TYPE.PING, 0, 0);
    host.writer.bytes(payload, 0, 8);
    host.markDirty();
    this.outstanding = payload;
    const sentAt = performance.now();
    this.awaitAck(this.options.timeoutMs, sentAt);
  }

  /** Waits for the ACK; a frame from the peer meanwhile moves the deadline to `timeout` after it. */
  private awaitAck(waitMs: number, sentAt: number): void {
    this.timeoutTimer = setTimeout(() => {
      this.timeoutTimer = null;
      if (this.stopped || this.outstanding === null) return;
      const since = Math.max(sentAt, this.lastReadAt);
      const left = since + this.options.timeoutMs - performance.now();
      if (left > 1) this.awaitAck(left, sentAt);
      else {
        // The reference closes without flushing: nothing more is owed to a dead peer.
        this.host.events.onKeepaliveTimeout?.();
        this.host.socket.destroy();
      }
    }, waitMs);
    this.timeoutTimer.unref();
  }
}
