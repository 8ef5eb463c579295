import type * as net from 'node:net';
import { Exchange, type ExchangeOwner } from './exchange.js';
import { BodyFramer, Framing, bodilessStatus, findHeadEnd, parseHead, reasonPhrase } from './h1-parse.js';
import type { HttpConnectionManager } from './manager.js';
import type { HttpRequest, ResponseSink } from './request.js';

const CHUNK_END = Buffer.from('0\r\n\r\n');
const CONTINUE = Buffer.from('HTTP/1.1 100 Continue\r\n\r\n');

/**
 * A downstream HTTP/1.x connection on a raw socket: parses request heads and bodies from
 * the socket's Buffers, runs one exchange at a time (pipelined requests wait in the buffer),
 * and writes responses as one head string plus body bytes. It is the exchange's sink.
 */
export class H1Downstream implements ResponseSink, ExchangeOwner {
  headersSent = false;
  private buf: Buffer | null = null;
  private exchange: Exchange | null = null;
  private framer: BodyFramer | null = null;
  private keepAlive = true;
  private closed = false;
  private paused = false;
  /** Framing of the response being written: chunked when the length is unknown. */
  private chunkedOut = false;
  private headOnly = false;
  private isHead = false;
  private pendingHead: string | null = null;
  private readonly openedAt = performance.now();
  private readonly remoteIp: string;

  constructor(
    readonly hcm: HttpConnectionManager,
    readonly socket: net.Socket,
  ) {
    this.remoteIp = (socket.remoteAddress ?? '').replace(/^::ffff:/, '');
    socket.setNoDelay(true);
    socket.on('data', (chunk: Buffer) => this.onData(chunk));
    socket.on('close', () => this.onClose());
    socket.on('error', () => {});
    socket.on('drain', () => this.exchange?.onDownstreamDrain());
    socket.on('end', () => {
      // Half-close from the client: finish the current response, then close.
      this.keepAlive = false;
      if (!this.exchange) this.socket.end();
    });
  }

  onData(chunk: Buffer): void {
    this.hcm.stats.cxRxBytes.add(chunk.length);
    this.buf = this.buf ? Buffer.concat([this.buf, chunk]) : chunk;
    this.process();
  }

  /** Parses as far as the buffer and the current exchange allow. */
  private process(): void {
    while (this.buf && !this.closed) {
      const buf = this.buf;
      if (this.framer) {
        const ex = this.exchange as Exchange;
        const used = this.framer.feed(buf, 0, (data) => ex.onBody(data));
        if (this.framer.error) {
          this.protocolError(400, 'bad chunked encoding');
          return;
        }
        this.buf = used === buf.length ? null : buf.subarray(used);
        if (!this.framer.done) return;
        this.framer = null;
        ex.onBodyEnd();
        continue;
      }
      if (this.exchange) {
        // A pipelined request waits until the current response is complete.
        if (buf.length > this.hcm.maxRequestHeadersBytes) {
          this.pauseReading();
          return;
        }
      }
      const end = findHeadEnd(buf, 0);
      if (end < 0) {
        if (buf.length > this.hcm.maxRequestHeadersBytes) {
          this.protocolError(431, '');
          return;
        }
        return;
      }
      if (end > this.hcm.maxRequestHeadersBytes) {
        this.protocolError(431, '');
        return;
      }
      this.buf = end === buf.length ? null : buf.subarray(end);
      this.startRequest(buf, end);
    }
  }

  private startRequest(buf: Buffer, end: number): void {
    const head = parseHead(buf, 0, end);
    if (!head || (head.c !== 'HTTP/1.1' && head.c !== 'HTTP/1.0') || head.b === '') {
      this.protocolError(400, '');
      return;
    }
    const method = head.a;
    const protocol = head.c as 'HTTP/1.1' | 'HTTP/1.0';
    let authority = '';
    let contentLength = -1;
    let chunked = false;
    let connection = '';
    let upgrade = false;
    let expectContinue = false;
    const headers: string[] = [];
    const raw = head.headers;
    for (let i = 0; i < raw.length; i += 2) {
      const name = raw[i] as string;
      const value = raw[i + 1] as string;
      switch (name) {
        case 'host':
          authority = value.toLowerCase();
          continue;
        case 'content-length':
          if (!/^\d+$/.test(value) || (contentLength >= 0 && Number(value) !== contentLength)) {
            this.protocolError(400, '');
            return;
          }
          contentLength = Number(value);
          continue;
        case 'transfer-encoding':
          if (!/^chunked$/i.test(value.trim())) {
            this.protocolError(501, '');
            return;
          }
          chunked = true;
          continue;
        case 'connection':
          connection = value.toLowerCase();
          continue;
        case 'upgrade':
          upgrade = true;
          continue;
        case 'expect':
          if (value.toLowerCase() === '100-continue') expectContinue = true;
          continue;
        case 'keep-alive':
        case 'proxy-connection':
        case 'te':
        case 'trailer':
        case 'http2-settings':
          continue;
      }
      headers.push(name, value);
    }
    if (chunked && contentLength >= 0) {
      this.protocolError(400, '');
      return;
    }
    if (protocol === 'HTTP/1.0') this.keepAlive = connection.includes('keep-alive');
    else if (connection.includes('close')) this.keepAlive = false;
    let path = head.b;
    if (!path.startsWith('/')) {
      // Absolute form (`GET http://host/path`): take the authority from it.
      const m = /^https?:\/\/([^/?#]+)([^#]*)$/i.exec(path);
      if (!m) {
        this.protocolError(method === 'CONNECT' ? 403 : 400, '');
        return;
      }
      authority = (m[1] as string).toLowerCase();
      path = m[2] || '/';
    }
    if (upgrade || method === 'CONNECT') {
      // Upgrades (WebSocket, h2c) and CONNECT are not proxied: refuse them plainly.
      this.keepAlive = false;
      this.protocolError(403, '', false);
      return;
    }
    const hasBody = chunked || contentLength > 0;
    const req: HttpRequest = {
      method,
      path,
      authority,
      scheme: 'http',
      headers,
      protocol,
      remoteIp: this.remoteIp,
      contentLength: chunked ? -1 : Math.max(contentLength, 0),
      hasBody,
    };
    if (expectContinue && hasBody) this.socket.write(CONTINUE);
    this.headersSent = false;
    this.isHead = method === 'HEAD';
    const ex = new Exchange(this.hcm, req, this, this);
    this.exchange = ex;
    if (hasBody) this.framer = new BodyFramer(chunked ? Framing.Chunked : Framing.Length, contentLength);
    ex.start();
    if (!hasBody || this.exchange !== ex) return;
    if (this.buf) this.process();
  }

  /** Answers a request the codec cannot parse, then closes: framing is lost. */
  private protocolError(status: number, text: string, count = true): void {
    const s = this.hcm.stats;
    if (count) s.cxProtocolError.inc();
    if (status === 431) s.rqTooLarge.inc();
    if (status < 500) s.rqClasses[3]?.inc();
    else s.rqClasses[4]?.inc();
    s.rqCompleted.inc();
    this.keepAlive = false;
    this.buf = null;
    this.framer = null;
    if (this.exchange) {
      this.exchange.onDownstreamReset();
      this.exchange = null;
      this.socket.destroy();
      return;
    }
    const body = text ? `${text}\n` : '';
    this.socket.end(
      `HTTP/1.1 ${status} ${reasonPhrase(status)}\r\ncontent-length: ${body.length}\r\n${body ? 'content-type: text/plain\r\n' : ''}connection: close\r\n\r\n${body}`,
      'latin1',
    );
  }

  // ---- ResponseSink ----

  writeHead(status: number, headers: string[], contentLength: number, endStream: boolean): void {
    this.headersSent = true;
    if (this.hcm.draining && this.hcm.shouldDrainClose()) {
      if (this.keepAlive) this.hcm.stats.cxDrainClose.inc();
      this.keepAlive = false;
    }
    let head = `HTTP/1.1 ${status} ${reasonPhrase(status)}\r\n`;
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
    if (!this.chunkedOut && head === null) return s.write(chunk);
    s.cork();
    if (head !== null) s.write(head, 'latin1');
    if (this.chunkedOut) s.write(`${chunk.length.toString(16)}\r\n`, 'latin1');
    let ok = s.write(chunk);
    if (this.chunkedOut) ok = s.write('\r\n', 'latin1');
    s.uncork();
    return ok;
  }

  end(): void {
    const head = this.pendingHead;
    this.pendingHead = null;
    if (head !== null) this.socket.write(head, 'latin1');
    if (this.chunkedOut && !this.headOnly) this.socket.write(CHUNK_END);
  }

  reset(): void {
    this.keepAlive = false;
    this.socket.destroy();
  }

  // ---- ExchangeOwner ----

  onExchangeDone(exchange: Exchange): void {
    if (this.exchange !== exchange) return;
    this.exchange = null;
    if (this.framer) {
      // The response finished before the request body: the rest of the body is unread.
      this.framer = null;
      this.keepAlive = false;
    }
    if (!this.keepAlive || this.closed) {
      this.socket.end();
      return;
    }
    this.resumeReading();
    if (this.buf) this.process();
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

  /** Closes the connection now if it is idle (drain); otherwise after the current response. */
  drainClose(): void {
    if (this.exchange) this.keepAlive = false;
    else {
      this.hcm.stats.cxDrainClose.inc();
      this.socket.end();
    }
  }

  destroy(): void {
    this.socket.destroy();
  }

  private onClose(): void {
    if (this.closed) return;
    this.closed = true;
    const ex = this.exchange;
    this.exchange = null;
    ex?.onDownstreamReset();
    this.hcm.onConnectionClosed(this, this.openedAt, false);
  }
}
