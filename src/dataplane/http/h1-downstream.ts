import type * as net from 'node:net';
import { FLAG } from '../access-log/stream-info.js';
import { BodyFramer, Framing } from '../codec/h1-body.js';
import type { RequestHead } from '../codec/h1-head.js';
import { RequestHeadParser } from '../codec/h1-parse.js';
import { bodilessStatus } from '../codec/h1-status.js';
import { guardedData } from '../codec/peer-guard.js';
import type { ResponseSink } from '../codec/request.js';
import { owned, ownViews, readInto } from '../codec/socket-reads.js';
import { codecReply } from './codec-reply.js';
import type { DownstreamOwner } from './downstream.js';
import { Exchange, type ExchangeOwner } from './exchange.js';
import { H1Lifetime } from './h1-lifetime.js';
import { overloadOf } from './head-checks.js';
import { type ConnectionFacts, connectionFacts, requestFromHead } from './h1-request.js';
import { headTail, PendingHead } from './h1-response-head.js';
import { StreamTimers } from './stream-timers.js';
import { startUpgrade } from './upgrade.js';

const CHUNK_END = Buffer.from('0\r\n\r\n');
const CONTINUE = Buffer.from('HTTP/1.1 100 Continue\r\n\r\n');
/** Up to this many body bytes are copied after the response head rather than written beside it. */
const HEAD_JOIN_MAX = 16 * 1024;

/**
 * A downstream HTTP/1.x connection on a raw socket: parses request heads and bodies from
 * the socket's Buffers, runs one exchange at a time, and writes responses as one head
 * with the first body bytes after it. It is the exchange's sink. Each head becomes a request in `h1-request.ts`;
 * the connection's timeouts, drain and close are its `H1Lifetime` (`h1-lifetime.ts`).
 *
 * Pipelined requests wait in the buffer until the current response is complete, so they are
 * answered in order and never reach the upstream concurrently; reading stops while more than
 * a head's worth of them waits. Received bytes are kept as a list of chunks, never joined:
 * the head parser keeps a partial head itself, so a head dripped a byte at a time costs
 * linear time.
 */
export class H1Downstream extends H1Lifetime implements ResponseSink, ExchangeOwner {
  headersSent = false;
  /** The stream timers of the connection, lent to each exchange in turn. */
  readonly timers = new StreamTimers();
  /** Received bytes not consumed yet, in order. */
  private chunks: Buffer[] = [];
  private buffered = 0;
  private exchange: Exchange | null = null;
  private framer: BodyFramer | null = null;
  private readonly parser: RequestHeadParser;
  private paused = false;
  private processing = false;
  /** Framing of the response being written: chunked when the length is unknown. */
  private chunkedOut = false;
  private headOnly = false;
  private isHead = false;
  private readonly pendingHead: PendingHead;
  private readonly openedAt = performance.now();
  private readonly facts: ConnectionFacts;
  /** An upgrade took the socket: reads go to its `data` events again. */
  private handedOver = false;

  constructor(hcm: DownstreamOwner, socket: net.Socket) {
    super(hcm, socket);
    this.facts = connectionFacts(socket);
    this.pendingHead = new PendingHead(hcm.stats.cxTxBytes);
    this.parser = new RequestHeadParser({
      maxHeadBytes: hcm.maxRequestHeadersBytes,
      maxHeadersCount: hcm.spec.maxHeadersCount,
    });
    socket.setNoDelay(true);
    if (readInto(socket, (chunk) => this.onRead(chunk))) socket.resume();
    else
      socket.on(
        'data',
        guardedData(socket, 'downstream read', (chunk) => this.onData(chunk)),
      );
    socket.on('close', () => this.onClose());
    socket.on('error', () => {});
    socket.on('drain', () => this.exchange?.onDownstreamDrain());
    socket.on('end', () => this.onPeerEnd());
    this.armIdle();
  }

  /** A read into the thread's buffer (`readInto`): what outlives it is copied. */
  private onRead(chunk: Buffer): boolean {
    if (this.handedOver) return this.socket.push(Buffer.from(chunk));
    this.onData(chunk);
    ownViews(this.chunks);
    return true;
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
      const used = framer.feed(this.chunks[0] as Buffer, 0, (data) => ex.onBody(owned(data)));
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
        // `pop` keeps the array's room; `shift` of the last chunk gave it up, so that the next
        // read's `push` grew a new one (150 B a request).
        if (this.chunks.length === 1) this.chunks.pop();
        else this.chunks.shift();
        left -= chunk.length;
      } else {
        this.chunks[0] = chunk.subarray(left);
        left = 0;
      }
    }
  }

  protected discard(): void {
    this.chunks = [];
    this.buffered = 0;
  }

  private startRequest(head: RequestHead): void {
    const http1 = this.hcm.spec.http1;
    const start = requestFromHead(head, this.facts, http1.allowAbsoluteUrl);
    if (!start) {
      this.protocolError(400, '');
      return;
    }
    this.keepAlive = start.keepAlive;
    const { req, upgrade } = start;
    if (req.method === 'CONNECT') {
      // CONNECT is not proxied: refuse it plainly.
      this.keepAlive = false;
      this.protocolError(403, '', false);
      return;
    }
    // An HTTP/1.0 request refused with 426 is refused before it could become a tunnel.
    if (upgrade !== null && (req.protocol === 'HTTP/1.1' || http1.acceptHttp10)) {
      // An upgrade the HCM and the route enable (WebSocket) becomes a tunnel; others are refused.
      ownViews(this.chunks);
      if (!req.hasBody && startUpgrade(this.hcm, this.socket, req, upgrade, this.chunks)) this.handOver();
      else {
        this.keepAlive = false;
        this.protocolError(403, '', false);
      }
      return;
    }
    if (start.expectContinue && req.hasBody) this.socket.write(CONTINUE);
    this.headersSent = false;
    this.isHead = req.method === 'HEAD';
    const ex = new Exchange(this.hcm, req, this, this);
    this.exchange = ex;
    if (req.hasBody)
      this.framer = new BodyFramer(head.chunked ? Framing.Chunked : Framing.Length, head.contentLength);
    ex.start();
  }

  /**
   * The socket now belongs to an upgrade tunnel (with the bytes buffered after the head):
   * this codec parses and answers nothing more, and only keeps the connection's bookkeeping
   * (received bytes, and the close).
   */
  private handOver(): void {
    this.handedOver = true;
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
    this.replyAndClose(status, text, count ? FLAG.DPE : 0);
  }

  /** A response of the codec itself (no exchange can carry it), then the connection closes. */
  protected replyAndClose(original: number, text: string, flags = 0): void {
    this.keepAlive = false;
    this.framer = null;
    this.discard();
    this.clearHeadTimer();
    const ex = this.exchange;
    if (ex) {
      // A bad body after the head: the answer, if none started, goes through the exchange
      // (which counts and logs it).
      if (!this.headersSent) {
        ex.onDownstreamProtocolError(original);
        return;
      }
      ex.onDownstreamReset();
      this.exchange = null;
      this.socket.destroy();
      return;
    }
    const { status, bytes, info } = codecReply(this.hcm, this.socket, original, text, flags);
    const s = this.hcm.stats;
    s.rqClasses[Math.floor(status / 100) - 1]?.inc();
    s.rqCompleted.inc();
    this.endSocket(bytes);
    this.hcm.onStreamEnd(info);
  }

  protected busy(): boolean {
    return this.exchange !== null;
  }

  protected waiting(): boolean {
    return this.buffered > 0;
  }

  // ---- ResponseSink ----

  writeHead(status: number, headers: string[], contentLength: number, endStream: boolean): void {
    this.headersSent = true;
    if (this.closeAfterNext || (this.hcm.draining && this.hcm.shouldDrainClose())) {
      if (this.keepAlive) this.hcm.stats.cxDrainClose.inc();
      this.keepAlive = false;
    } else if (this.keepAlive && overloadOf(this.hcm)?.disable_http_keepalive) {
      this.hcm.stats.cxOverloadDisableKeepalive.inc();
      this.keepAlive = false;
    }
    const http10 = this.exchange?.req.protocol === 'HTTP/1.0' && this.hcm.spec.http1.acceptHttp10;
    this.headOnly = this.isHead || bodilessStatus(status);
    this.chunkedOut = false;
    let length = -1;
    if (!bodilessStatus(status)) {
      if (contentLength >= 0) length = contentLength;
      else if (this.isHead) {
        // no framing needed
      } else if (endStream) length = 0;
      else if (this.exchange?.req.protocol === 'HTTP/1.0') this.keepAlive = false;
      else this.chunkedOut = true;
    }
    const tail = headTail(this.chunkedOut, !this.keepAlive, http10);
    // As the reference: an accepted HTTP/1.0 request gets an HTTP/1.0 answer.
    const version = http10 ? 'HTTP/1.0' : 'HTTP/1.1';
    this.pendingHead.set(version, status, headers, length, tail, endStream ? null : this.socket);
    if (endStream) this.socket.write(this.pendingHead.take(null));
  }

  writeData(chunk: Buffer): boolean {
    if (this.headOnly || chunk.length === 0) return true;
    this.hcm.stats.cxTxBytes.add(chunk.length);
    const s = this.socket;
    const pending = this.pendingHead.waiting;
    if (!this.chunkedOut) {
      if (!pending) return s.write(chunk);
      // Head and first body bytes as one Buffer: one write, no `writev` of two pieces (the
      // usual small response); a large first chunk is corked instead of copied.
      if (chunk.length <= HEAD_JOIN_MAX) return s.write(this.pendingHead.take(chunk));
    }
    s.cork();
    if (pending) s.write(this.pendingHead.take(null));
    if (this.chunkedOut) s.write(`${chunk.length.toString(16)}\r\n`, 'latin1');
    let ok = s.write(chunk);
    if (this.chunkedOut) ok = s.write('\r\n', 'latin1');
    s.uncork();
    return ok;
  }

  end(trailers?: readonly string[]): void {
    if (this.pendingHead.waiting) this.socket.write(this.pendingHead.take(null));
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

  destroy(): void {
    this.socket.destroy();
  }

  private onClose(): void {
    if (this.closed) return;
    this.closed = true;
    this.clearTimers();
    this.timers.close();
    this.discard();
    const ex = this.exchange;
    this.exchange = null;
    ex?.onDownstreamReset();
    this.hcm.onConnectionClosed(this, this.openedAt, false);
  }
}
