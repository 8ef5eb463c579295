/**
 * The lifetime of a downstream HTTP/1 connection, apart from the requests it reads and the
 * responses it writes (`h1-downstream.ts`): the connection idle timeout, the request head
 * deadline, the maximum duration, drain, and the close (our side ended after what is written,
 * the peer given `delayed_close_timeout` to close its own).
 */
import type * as net from 'node:net';
import type { DownstreamOwner } from './downstream.js';
import { StreamTimer, type TimerTarget } from './stream-timer.js';

/**
 * After our side of `socket` was ended: the peer gets `ms` (`delayed_close_timeout`) to close
 * its own, restarted while the write buffer still drains, then the socket is destroyed; with
 * `ms` 0, once what is written is flushed. Whoever ended it must be reading it, or the peer's
 * close is never seen.
 */
export function destroyAfterDelayedClose(socket: net.Socket, ms: number): void {
  if (ms <= 0) {
    socket.once('finish', () => socket.destroy());
    return;
  }
  let pending = socket.writableLength;
  let timer: NodeJS.Timeout;
  const check = () => {
    const now = socket.writableLength;
    if (now > 0 && now < pending) {
      pending = now;
      timer = setTimeout(check, ms).unref();
      return;
    }
    socket.destroy();
  };
  timer = setTimeout(check, ms).unref();
  socket.once('close', () => clearTimeout(timer));
}

export abstract class H1Lifetime implements TimerTarget {
  /** False once a request, the client or the server asked to close: no further request is read. */
  protected keepAlive = true;
  /** `end()` was called on the socket: only the delayed close remains. */
  protected closing = false;
  protected closed = false;
  /** Armed after each response: a clock read per request rather than a `Timeout` refresh. */
  protected readonly idleTimer = new StreamTimer();
  /** The idle timer counts only while this is set; data clears it (the timer is reused). */
  protected idleArmed = false;
  protected headTimer: NodeJS.Timeout | null = null;
  private durationTimer: NodeJS.Timeout | null = null;
  private drainTimer: NodeJS.Timeout | null = null;
  /** Drained while idle: the next response closes the connection. */
  protected closeAfterNext = false;

  constructor(
    readonly hcm: DownstreamOwner,
    readonly socket: net.Socket,
  ) {
    const maxMs = hcm.timeouts.maxConnectionDurationMs;
    if (maxMs > 0) this.durationTimer = setTimeout(() => this.onMaxDuration(), maxMs).unref();
  }

  /** A request is in flight. */
  protected abstract busy(): boolean;
  /** Received bytes wait that are no request yet. */
  protected abstract waiting(): boolean;
  /** Drops the received bytes not read yet. */
  protected abstract discard(): void;
  /** Answers with the connection's own response, then closes. */
  protected abstract replyAndClose(status: number, text: string): void;

  /** Starts (or restarts) the connection idle timeout: no request in flight or arriving. */
  protected armIdle(): void {
    const ms = this.hcm.timeouts.connectionIdleMs;
    if (ms <= 0) return;
    this.idleArmed = true;
    this.idleTimer.arm(ms, this, 0);
  }

  /** The connection idle timer fired. */
  onTimer(): void {
    this.onIdleTimeout();
  }

  protected onIdleTimeout(): void {
    if (!this.idleArmed || this.busy() || this.headTimer || this.waiting()) return;
    this.hcm.stats.cxIdleTimeout.inc();
    this.endSocket();
  }

  /** A request head has started: it must be complete within the head deadline. */
  protected armHeadTimer(): void {
    const ms = this.hcm.timeouts.headDeadlineMs;
    if (ms <= 0 || this.headTimer) return;
    this.headTimer = setTimeout(() => this.onHeadTimeout(), ms).unref();
  }

  protected clearHeadTimer(): void {
    if (!this.headTimer) return;
    clearTimeout(this.headTimer);
    this.headTimer = null;
  }

  protected onHeadTimeout(): void {
    this.headTimer = null;
    if (this.busy() || this.closing || this.closed) return;
    const configured = this.hcm.timeouts.requestHeadersMs > 0;
    const s = this.hcm.stats;
    (configured ? s.rqHeaderTimeout : s.rqIdleTimeout).inc();
    this.replyAndClose(408, configured ? 'request header timeout' : 'stream timeout');
  }

  protected onMaxDuration(): void {
    this.durationTimer = null;
    if (this.closing || this.closed) return;
    this.hcm.stats.cxMaxDurationReached.inc();
    // The request in flight is answered (with `connection: close`); an idle connection closes now.
    this.keepAlive = false;
    if (!this.busy()) this.endSocket();
  }

  /**
   * Closes our side after what is written; the peer gets `delayed_close_timeout` to close
   * its side, restarted while the write buffer still drains, then the socket is destroyed.
   */
  protected endSocket(last?: string): void {
    if (this.closing || this.closed) return;
    this.closing = true;
    this.keepAlive = false;
    this.discard();
    if (last === undefined) this.socket.end();
    else this.socket.end(last, 'latin1');
    destroyAfterDelayedClose(this.socket, this.hcm.timeouts.delayedCloseMs);
  }

  /**
   * The client closed its side. As in the reference, that ends the connection: a request in
   * flight is reset at once, so its upstream connection and circuit breaker slot are
   * released (an abandoned upload would otherwise wait for a body that never comes).
   */
  protected onPeerEnd(): void {
    if (this.busy()) this.socket.destroy();
    else this.endSocket();
  }

  /**
   * Drain: the response in flight, or the next one, closes the connection. An idle one closes
   * after `graceMs` unless a request arrives first: closed at once, it would reset a request
   * the client is sending at that moment (a keep-alive race clients see as an error).
   */
  drainClose(graceMs: number): void {
    if (this.busy()) {
      this.keepAlive = false;
      return;
    }
    // Not `keepAlive = false`: that would leave the request arriving now unread.
    this.closeAfterNext = true;
    this.drainTimer = setTimeout(() => {
      this.drainTimer = null;
      if (this.busy() || this.headTimer || this.waiting()) return;
      this.hcm.stats.cxDrainClose.inc();
      this.endSocket();
    }, graceMs).unref();
  }

  protected clearTimers(): void {
    this.idleTimer.close();
    for (const timer of [this.headTimer, this.durationTimer, this.drainTimer]) if (timer) clearTimeout(timer);
  }
}
