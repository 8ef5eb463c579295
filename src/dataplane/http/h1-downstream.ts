import type * as net from 'node:net';
import { joinHostPort } from '../access-log/stream-info.js';
import { BodyFramer, Framing } from '../codec/h1-body.js';
import type { RequestHead } from '../codec/h1-head.js';
import { RequestHeadParser, validAuthority } from '../codec/h1-parse.js';
import { bodilessStatus, reasonPhrase } from '../codec/h1-status.js';
import type { HttpRequest, ResponseSink } from '../codec/request.js';
import { restoredDestination } from '../listeners/original-dst.js';
import { type PeerIdentitySource, peerIdentitySource } from '../listeners/peer-identity.js';
import type { DownstreamOwner } from './downstream.js';
import { Exchange, type ExchangeOwner } from './exchange.js';
import { StreamTimers } from './stream-timers.js';
import { startUpgrade } from './upgrade.js';

const CHUNK_END = Buffer.from('0\r\n\r\n');
const CONTINUE = Buffer.from('HTTP/1.1 100 Continue\r\n\r\n');
/** Up to this many body bytes are copied after the response head rather than written beside it. */
const HEAD_JOIN_MAX = 16 * 1024;

/**
 * A downstream HTTP/1.x connection on a raw socket: parses request heads and bodies from
 * the socket's Buffers, runs one exchange at a time, and writes responses as one head string
 * plus body bytes. It is the exchange's sink.
 *
 * Pipelined requests wait in the buffer until the current response is complete, so they are
 * answered in order and never reach the upstream concurrently; reading stops while more than
 * a head's worth of them waits. Received bytes are kept as a list of chunks, never joined:
 * the head parser keeps a partial head itself, so a head dripped a byte at a time costs
 * linear time.
 */
export class H1Downstream implements ResponseSink, ExchangeOwner {
  headersSent = false;
  /** The stream timers of the connection, lent to each exchange in turn. */
  readonly timers = new StreamTimers();
  /** Received bytes not consumed yet, in order. */
  private chunks: Buffer[] = [];
  private buffered = 0;
  private exchange: Exchange | null = null;
  private framer: BodyFramer | null = null;
  private readonly parser: RequestHeadParser;
  /** False once a request, the client or the server asked to close: no further request is read. */
  private keepAlive = true;
  /** `end()` was called on the socket: only the delayed close remains. */
  private closing = false;
  private closed = false;
  private paused = false;
  private processing = false;
  /** Framing of the response being written: chunked when the length is unknown. */
  private chunkedOut = false;
  private headOnly = false;
  private isHead = false;
  private pendingHead: string | null = null;
  private idleTimer: NodeJS.Timeout | null = null;
  /** The idle timer counts only while this is set; data clears it (the timer is reused). */
  private idleArmed = false;
  private headTimer: NodeJS.Timeout | null = null;
  private durationTimer: NodeJS.Timeout | null = null;
  private closeTimer: NodeJS.Timeout | null = null;
  private drainTimer: NodeJS.Timeout | null = null;
  /** Drained while idle: the next response closes the connection. */
  private closeAfterNext = false;
  private readonly openedAt = performance.now();
  private readonly remoteIp: string;
  private readonly remoteAddress: string;
  private readonly localAddress: string;
  private readonly originalDst: string | null;
  private readonly peer: PeerIdentitySource | undefined;
  /** A TLS socket (a chain with a DownstreamTlsContext) carries https. */
  private readonly scheme: 'http' | 'https';

  constructor(
    readonly hcm: DownstreamOwner,
    readonly socket: net.Socket,
  ) {
    this.remoteIp = (socket.remoteAddress ?? '').replace(/^::ffff:/, '');
    this.remoteAddress = joinHostPort(socket.remoteAddress, socket.remotePort);
    this.localAddress = joinHostPort(socket.localAddress, socket.localPort);
    this.originalDst = restoredDestination(socket);
    this.peer = peerIdentitySource(socket);
    this.scheme = this.peer ? 'https' : 'http';
    this.parser = new RequestHeadParser({
      maxHeadBytes: hcm.maxRequestHeadersBytes,
      maxHeadersCount: hcm.spec.maxHeadersCount,
    });
    socket.setNoDelay(true);
    socket.on('data', (chunk: Buffer) => this.onData(chunk));
    socket.on('close', () => this.onClose());
    socket.on('error', () => {});
    socket.on('drain', () => this.exchange?.onDownstreamDrain());
    socket.on('end', () => this.onPeerEnd());
    const maxMs = hcm.timeouts.maxConnectionDurationMs;
    if (maxMs > 0) this.durationTimer = setTimeout(() => this.onMaxDuration(), maxMs).unref();
    this.armIdle();
  }

  onData(chunk: Buffer): void {
    this.hcm.stats.cxRxBytes.add(chunk.length);
    this.idleArmed = false;
    // After `Connection: close`, or while closing, later bytes are never requests.
    if ((this.closing || !this.keepAlive) && !this.framer) return;
    this.chunks.push(chunk);
    this.buffered += chunk.length;
    this.process();
  }

  /** Parses as far as the buffer and the current exchange allow; never re-entered. */
  private process(): void {
    if (this.processing) return;
    this.processing = true;
    try {
      this.step();
    } finally {
      this.processing = false;
    }
  }

  private step(): void {
    while (!this.closed && !this.closing) {
      if (this.framer) {
        if (this.buffered === 0 || !this.feedBody(this.framer)) return;
        continue;
      }
      if (this.exchange) {
        // A pipelined request waits until the current response is complete.
        if (!this.keepAlive) this.discard();
        else if (this.buffered > this.hcm.maxRequestHeadersBytes) this.pauseReading();
        return;
      }
      if (!this.keepAlive) {
        this.endSocket();
        return;
      }
      if (this.buffered === 0) {
        if (!this.headTimer) this.armIdle();
        return;
      }
      const head = this.parser.feed(this.chunks[0] as Buffer, 0);
      this.consume(this.parser.used);
      if (this.parser.error) {
        this.protocolError(this.parser.error.status, '');
        return;
      }
      if (!head) {
        this.armHeadTimer();
        continue;
      }
      this.clearHeadTimer();
      this.startRequest(head);
    }
  }

  /** Feeds buffered bytes to the body framer; false when it needs more. */
  private feedBody(framer: BodyFramer): boolean {
    const ex = this.exchange as Exchange;
    while (this.buffered > 0) {
      const used = framer.feed(this.chunks[0] as Buffer, 0, (data) => ex.onBody(data));
      if (this.framer !== framer) return true; // the exchange ended while taking the body
      if (framer.error) {
        this.protocolError(400, 'bad chunked encoding');
        // On with the loop, which closes the connection after the 400.
        return !this.socket.destroyed;
      }
      this.consume(used);
      if (framer.done) {
        this.framer = null;
        ex.onBodyEnd();
        return true;
      }
    }
    return false;
  }

  /** Drops the first `n` buffered bytes. */
  private consume(n: number): void {
    this.buffered -= n;
    let left = n;
    while (left > 0) {
      const chunk = this.chunks[0] as Buffer;
      if (chunk.length <= left) {
        this.chunks.shift();
        left -= chunk.length;
      } else {
        this.chunks[0] = chunk.subarray(left);
        left = 0;
      }
    }
  }

  private discard(): void {
    this.chunks = [];
    this.buffered = 0;
  }

  private startRequest(head: RequestHead): void {
    const method = head.method;
    const protocol = head.version;
    const contentLength = head.contentLength;
    const chunked = head.chunked;
    let authority = '';
    let connection = '';
    let upgrade: string | null = null;
    let expectContinue = false;
    const headers: string[] = [];
    let teTrailers = false;
    const raw = head.headers;
    for (let i = 0; i < raw.length; i += 2) {
      const name = raw[i] as string;
      const value = raw[i + 1] as string;
      switch (name) {
        case 'host':
          authority = value.toLowerCase();
          continue;
        case 'content-length':
        case 'transfer-encoding':
          continue;
        case 'connection':
          // Several fields are one list (RFC 9110 5.3): `Connection: upgrade` then `Connection: close`.
          connection = connection ? `${connection}, ${value.toLowerCase()}` : value.toLowerCase();
          continue;
        case 'upgrade':
          upgrade = value;
          continue;
        case 'expect':
          if (value.toLowerCase() === '100-continue') expectContinue = true;
          continue;
        case 'te':
          if (value.toLowerCase().includes('trailers')) teTrailers = true;
          continue;
        case 'keep-alive':
        case 'proxy-connection':
        case 'trailer':
        case 'http2-settings':
          continue;
      }
      headers.push(name, value);
    }
    if (protocol === 'HTTP/1.0') this.keepAlive = connection.includes('keep-alive');
    else if (connection.includes('close')) this.keepAlive = false;
    // An upgrade needs both fields (RFC 9110 7.8); h2c is not offered, so such a request is
    // served as HTTP/1.1, as the reference and nginx do (`curl --http2` sends it on http://).
    if (upgrade !== null && (!connection.includes('upgrade') || upgrade.toLowerCase() === 'h2c')) upgrade = null;
    let path = head.target;
    const http1 = this.hcm.spec.http1;
    if (path.charCodeAt(0) !== 47 /* / */ && method !== 'CONNECT' && path !== '*') {
      // Absolute form (`GET http://host/path`): the authority comes from it (RFC 9112 3.2.2).
      const m = /^https?:\/\/([^/?#]+)(.*)$/i.exec(path);
      // The authority becomes the Host: checked as a Host is (userinfo refused, RFC 9110 4.2.4).
      if (!m || !validAuthority(m[1] as string)) {
        this.protocolError(400, '');
        return;
      }
      // Without allow_absolute_url the target stays the path, which the exchange answers 404.
      if (http1.allowAbsoluteUrl) {
        authority = (m[1] as string).toLowerCase();
        const rest = m[2] as string;
        path = rest.charCodeAt(0) === 47 /* / */ ? rest : `/${rest}`;
      }
    }
    if (method === 'CONNECT') {
      // CONNECT is not proxied: refuse it plainly.
      this.keepAlive = false;
      this.protocolError(403, '', false);
      return;
    }
    const hasBody = chunked || contentLength > 0;
    const req: HttpRequest = {
      method,
      path,
      authority,
      scheme: this.scheme,
      headers,
      protocol,
      remoteIp: this.remoteIp,
      remotePort: this.socket.remotePort,
      localAddress: this.localAddress,
      remoteAddress: this.remoteAddress,
      contentLength: chunked ? -1 : Math.max(contentLength, 0),
      hasBody,
    };
    if (teTrailers) req.acceptsTrailers = true;
    if (this.originalDst) req.originalDst = this.originalDst;
    if (this.peer) req.peer = this.peer;
    // An HTTP/1.0 request refused with 426 is refused before it could become a tunnel.
    if (upgrade !== null && (protocol === 'HTTP/1.1' || http1.acceptHttp10)) {
      // An upgrade the HCM and the route enable (WebSocket) becomes a tunnel; others are refused.
      if (!hasBody && startUpgrade(this.hcm, this.socket, req, upgrade, this.chunks)) this.handOver();
      else {
        this.keepAlive = false;
        this.protocolError(403, '', false);
      }
      return;
    }
    if (expectContinue && hasBody) this.socket.write(CONTINUE);
    this.headersSent = false;
    this.isHead = method === 'HEAD';
    const ex = new Exchange(this.hcm, req, this, this);
    this.exchange = ex;
    if (hasBody) this.framer = new BodyFramer(chunked ? Framing.Chunked : Framing.Length, contentLength);
    ex.start();
  }

  /**
   * The socket now belongs to an upgrade tunnel (with the bytes buffered after the head):
   * this codec parses and answers nothing more, and only keeps the connection's bookkeeping
   * (received bytes, and the close).
   */
  private handOver(): void {
    this.chunks = [];
    this.buffered = 0;
    this.closing = true;
    this.keepAlive = false;
  }

  /** Answers a request the codec cannot parse, then closes: framing is lost. */
  private protocolError(status: number, text: string, count = true): void {
    const s = this.hcm.stats;
    if (count) s.cxProtocolError.inc();
    if (status === 431) s.rqTooLarge.inc();
    this.replyAndClose(status, text);
  }

  /** A response of the codec itself (no exchange can carry it), then the connection closes. */
  private replyAndClose(status: number, text: string): void {
    this.keepAlive = false;
    this.framer = null;
    this.discard();
    this.clearHeadTimer();
    const ex = this.exchange;
    if (ex) {
      // A bad body after the head: the answer, if none started, goes through the exchange
      // (which counts and logs it).
      if (!this.headersSent) {
        ex.onDownstreamProtocolError(status);
        return;
      }
      ex.onDownstreamReset();
      this.exchange = null;
      this.socket.destroy();
      return;
    }
    const s = this.hcm.stats;
    if (status < 500) s.rqClasses[3]?.inc();
    else s.rqClasses[4]?.inc();
    s.rqCompleted.inc();
    const body = text ? `${text}\n` : '';
    this.endSocket(
      `HTTP/1.1 ${status} ${reasonPhrase(status)}\r\ncontent-length: ${body.length}\r\n${body ? 'content-type: text/plain\r\n' : ''}connection: close\r\n\r\n${body}`,
    );
  }

  // ---- timeouts ----

  /** Starts (or restarts) the connection idle timeout: no request in flight or arriving. */
  private armIdle(): void {
    const ms = this.hcm.timeouts.connectionIdleMs;
    if (ms <= 0) return;
    this.idleArmed = true;
    if (this.idleTimer) this.idleTimer.refresh();
    else this.idleTimer = setTimeout(() => this.onIdleTimeout(), ms).unref();
  }

  private onIdleTimeout(): void {
    if (!this.idleArmed || this.exchange || this.headTimer || this.buffered > 0) return;
    this.hcm.stats.cxIdleTimeout.inc();
    this.endSocket();
  }

  /** A request head has started: it must be complete within the head deadline. */
  private armHeadTimer(): void {
    const ms = this.hcm.timeouts.headDeadlineMs;
    if (ms <= 0 || this.headTimer) return;
    this.headTimer = setTimeout(() => this.onHeadTimeout(), ms).unref();
  }

  private clearHeadTimer(): void {
    if (!this.headTimer) return;
    clearTimeout(this.headTimer);
    this.headTimer = null;
  }

  private onHeadTimeout(): void {
    this.headTimer = null;
    if (this.exchange || this.closing || this.closed) return;
    const configured = this.hcm.timeouts.requestHeadersMs > 0;
    const s = this.hcm.stats;
    (configured ? s.rqHeaderTimeout : s.rqIdleTimeout).inc();
    this.replyAndClose(408, configured ? 'request header timeout' : 'stream timeout');
  }

  private onMaxDuration(): void {
    this.durationTimer = null;
    if (this.closing || this.closed) return;
    this.hcm.stats.cxMaxDurationReached.inc();
    // The request in flight is answered (with `connection: close`); an idle connection closes now.
    this.keepAlive = false;
    if (!this.exchange) this.endSocket();
  }

  /**
   * Closes our side after what is written; the peer gets `delayed_close_timeout` to close
   * its side, restarted while the write buffer still drains, then the socket is destroyed.
   */
  private endSocket(last?: string): void {
    if (this.closing || this.closed) return;
    this.closing = true;
    this.keepAlive = false;
    this.discard();
    if (last === undefined) this.socket.end();
    else this.socket.end(last, 'latin1');
    const ms = this.hcm.timeouts.delayedCloseMs;
    if (ms <= 0) {
      this.socket.once('finish', () => this.socket.destroy());
      return;
    }
    let pending = this.socket.writableLength;
    const check = () => {
      const now = this.socket.writableLength;
      if (now > 0 && now < pending) {
        pending = now;
        this.closeTimer = setTimeout(check, ms).unref();
        return;
      }
      this.closeTimer = null;
      this.socket.destroy();
    };
    this.closeTimer = setTimeout(check, ms).unref();
  }

  /**
   * The client closed its side. As in the reference, that ends the connection: a request in
   * flight is reset at once, so its upstream connection and circuit breaker slot are
   * released (an abandoned upload would otherwise wait for a body that never comes).
   */
  private onPeerEnd(): void {
    if (this.exchange) this.socket.destroy();
    else this.endSocket();
  }

  // ---- ResponseSink ----

  writeHead(status: number, headers: string[], contentLength: number, endStream: boolean): void {
    this.headersSent = true;
    if (this.closeAfterNext || (this.hcm.draining && this.hcm.shouldDrainClose())) {
      if (this.keepAlive) this.hcm.stats.cxDrainClose.inc();
      this.keepAlive = false;
    } else if (this.keepAlive && this.hcm.deps.ctx.store.state.server.overload?.disable_http_keepalive) {
      this.hcm.stats.cxOverloadDisableKeepalive.inc();
      this.keepAlive = false;
    }
    const http10 = this.exchange?.req.protocol === 'HTTP/1.0' && this.hcm.spec.http1.acceptHttp10;
    // As the reference: an accepted HTTP/1.0 request gets an HTTP/1.0 answer.
    let head = `${http10 ? 'HTTP/1.0' : 'HTTP/1.1'} ${status} ${reasonPhrase(status)}\r\n`;
    for (let i = 0; i < headers.length; i += 2) head += `${headers[i]}: ${headers[i + 1]}\r\n`;
    this.headOnly = this.isHead || bodilessStatus(status);
    this.chunkedOut = false;
    if (!bodilessStatus(status)) {
      if (contentLength >= 0) head += `content-length: ${contentLength}\r\n`;
      else if (this.isHead) {
        // no framing needed
      } else if (endStream) head += 'content-length: 0\r\n';
      else if (this.exchange?.req.protocol === 'HTTP/1.0') this.keepAlive = false;
      else {
        head += 'transfer-encoding: chunked\r\n';
        this.chunkedOut = true;
      }
    }
    if (!this.keepAlive) head += 'connection: close\r\n';
    else if (http10) head += 'connection: keep-alive\r\n';
    head += '\r\n';
    this.hcm.stats.cxTxBytes.add(head.length);
    if (endStream) {
      this.socket.write(head, 'latin1');
      this.pendingHead = null;
    } else this.pendingHead = head;
  }

  writeData(chunk: Buffer): boolean {
    if (this.headOnly || chunk.length === 0) return true;
    this.hcm.stats.cxTxBytes.add(chunk.length);
    const s = this.socket;
    const head = this.pendingHead;
    this.pendingHead = null;
    if (!this.chunkedOut) {
      if (head === null) return s.write(chunk);
      // Head and first body bytes as one Buffer: one write, no `writev` of two pieces (the
      // usual small response); a large first chunk is corked instead of copied.
      if (chunk.length <= HEAD_JOIN_MAX) {
        const out = Buffer.allocUnsafe(head.length + chunk.length);
        out.write(head, 0, 'latin1');
        chunk.copy(out, head.length);
        return s.write(out);
      }
    }
    s.cork();
    if (head !== null) s.write(head, 'latin1');
    if (this.chunkedOut) s.write(`${chunk.length.toString(16)}\r\n`, 'latin1');
    let ok = s.write(chunk);
    if (this.chunkedOut) ok = s.write('\r\n', 'latin1');
    s.uncork();
    return ok;
  }

  end(trailers?: readonly string[]): void {
    const head = this.pendingHead;
    this.pendingHead = null;
    if (head !== null) this.socket.write(head, 'latin1');
    if (!this.chunkedOut || this.headOnly) return;
    // Trailers go in the last chunk only to a client that said it reads them (`te: trailers`).
    if (trailers === undefined || trailers.length === 0 || this.exchange?.req.acceptsTrailers !== true)
      this.socket.write(CHUNK_END);
    else {
      let last = '0\r\n';
      for (let i = 0; i < trailers.length; i += 2) last += `${trailers[i]}: ${trailers[i + 1]}\r\n`;
      this.socket.write(`${last}\r\n`, 'latin1');
    }
  }

  reset(): void {
    this.keepAlive = false;
    this.socket.destroy();
  }

  // ---- ExchangeOwner ----

  onInvalidMessage(): void {
    if (!this.hcm.spec.http1.streamErrorOnInvalidMessage) this.keepAlive = false;
  }

  onExchangeDone(exchange: Exchange): void {
    if (this.exchange !== exchange) return;
    this.exchange = null;
    if (this.framer) {
      // The response finished before the request body: the rest of the body is unread.
      this.framer = null;
      this.keepAlive = false;
    }
    if (this.closed) return;
    this.resumeReading();
    this.process();
  }

  pauseReading(): void {
    if (this.paused) return;
    this.paused = true;
    this.socket.pause();
  }

  resumeReading(): void {
    if (!this.paused) return;
    this.paused = false;
    this.socket.resume();
  }

  /**
   * Drain: the response in flight, or the next one, closes the connection. An idle one closes
   * after `graceMs` unless a request arrives first: closed at once, it would reset a request
   * the client is sending at that moment (a keep-alive race clients see as an error).
   */
  drainClose(graceMs: number): void {
    if (this.exchange) {
      this.keepAlive = false;
      return;
    }
    // Not `keepAlive = false`: that would leave the request arriving now unread.
    this.closeAfterNext = true;
    this.drainTimer = setTimeout(() => {
      this.drainTimer = null;
      if (this.exchange || this.headTimer || this.buffered > 0) return;
      this.hcm.stats.cxDrainClose.inc();
      this.endSocket();
    }, graceMs).unref();
  }

  destroy(): void {
    this.socket.destroy();
  }

  private onClose(): void {
    if (this.closed) return;
    this.closed = true;
    for (const timer of [
      this.idleTimer,
      this.headTimer,
      this.durationTimer,
      this.closeTimer,
      this.drainTimer,
    ])
      if (timer) clearTimeout(timer);
    this.timers.close();
    this.discard();
    const ex = this.exchange;
    this.exchange = null;
    ex?.onDownstreamReset();
    this.hcm.onConnectionClosed(this, this.openedAt, false);
  }
}
