import type * as net from 'node:net';
import type { GrpcCheckSettings, HttpCheckSettings, TcpCheckSettings } from '../../config/health.js';
import { BodyFramer, Framing, responseFraming } from '../../dataplane/codec/h1-body.js';
import type { ResponseHead } from '../../dataplane/codec/h1-head.js';
import { ResponseHeadParser } from '../../dataplane/codec/h1-parse.js';
import { guardedData } from '../../dataplane/codec/peer-guard.js';
import { GrpcProbe, Http2Probe } from './http2-probes.js';
import {
  authorityOf,
  type CheckResult,
  checkHeaders,
  connectTo,
  DEGRADED,
  HEALTHCHECKED_CLUSTER,
  headerOf,
  httpVerdict,
  MAX_ANSWER_BYTES,
  type Probe,
  type ProbeTarget,
  SocketProbe,
} from './probe.js';

/**
 * HTTP/1.1 checks on one raw connection kept between checks (or a new one each time): the
 * request is written by hand and the response read with the data plane's own HTTP/1 parser
 * and body framer, only as far as a check needs, because at a thousand hosts per second the
 * general HTTP client cost several times more CPU.
 */
class Http1Probe extends SocketProbe {
  private readonly requestHead: string;
  /** One per connection: a refused head leaves it failed, and a failure closes the connection. */
  private parser = new ResponseHeadParser();
  /** The final (not interim) head of the current check's answer, and its body's framer. */
  private answer: { head: ResponseHead; body: BodyFramer } | null = null;

  constructor(
    private readonly target: ProbeTarget,
    private readonly settings: HttpCheckSettings,
    private readonly reuse: boolean,
  ) {
    super();
    this.requestHead = `GET ${settings.path} HTTP/1.1\r\nhost: ${authorityOf(target, settings.host)}\r\n`;
  }

  check(): Promise<CheckResult> {
    return new Promise((resolve) => {
      this.pending = resolve;
      this.answer = null;
      let request = this.requestHead;
      const headers = checkHeaders(this.settings);
      for (let i = 0; i < headers.length; i += 2) request += `${headers[i]}: ${headers[i + 1]}\r\n`;
      if (!this.reuse) request += 'connection: close\r\n';
      (this.socket ?? this.connect()).write(`${request}\r\n`, 'latin1');
    });
  }

  private connect(): net.Socket {
    const socket = connectTo(this.target, false);
    this.socket = socket;
    this.parser = new ResponseHeadParser();
    // A throw reading the answer closes the socket: the check fails as `network`.
    socket.on(
      'data',
      guardedData(socket, 'HTTP health check read', (chunk) => {
        if (!this.pending) return;
        const result = this.read(chunk);
        if (result) this.settle(result);
      }),
    );
    socket.on('error', () => {});
    socket.on('close', () => {
      if (this.socket === socket) this.socket = null;
      // A body that runs to the close is complete now; anything else was cut short.
      const answer = this.answer;
      if (answer?.body.framing === Framing.UntilClose) this.settle(this.verdict(answer.head));
      else this.settle('network');
    });
    return socket;
  }

  /** The verdict once `chunk` completes the answer, null while more is needed. */
  private read(chunk: Buffer): CheckResult | null {
    let off = 0;
    while (!this.answer) {
      const head = this.parser.feed(chunk, off);
      off += this.parser.used;
      if (this.parser.error) return this.malformed();
      if (!head) return null;
      // An interim answer (100 Continue) is followed by the real one.
      if (head.status < 200) continue;
      this.answer = { head, body: new BodyFramer(responseFraming(head, 'GET'), head.contentLength) };
    }
    const { head, body } = this.answer;
    body.feed(chunk, off, () => {});
    if (body.error) return this.malformed();
    if (!body.done) return null;
    const connection = headerOf(head.headers, 'connection');
    const close = connection === undefined ? head.version === 'HTTP/1.0' : /close/i.test(connection);
    if (close || !this.reuse) this.close();
    return this.verdict(head);
  }

  /** A malformed answer loses the framing: the connection goes, and the check failed on the network. */
  private malformed(): CheckResult {
    this.close();
    return 'network';
  }

  private verdict(head: ResponseHead): CheckResult {
    const cluster = headerOf(head.headers, HEALTHCHECKED_CLUSTER);
    const degraded = headerOf(head.headers, DEGRADED) !== undefined;
    return httpVerdict(this.settings, this.target, head.status, cluster, degraded);
  }
}

/** True when every block of `receive` occurs in `data`, in order (the reference's fuzzy match). */
function payloadsFound(data: Buffer, receive: readonly Buffer[]): boolean {
  let from = 0;
  for (const block of receive) {
    const at = data.indexOf(block, from);
    if (at < 0) return false;
    from = at + block.length;
  }
  return true;
}

/**
 * TCP checks: connect, write `send`, wait until every `receive` block arrived. Without
 * `receive` a check is a connect, closed at once (the reference's connect-only check); with
 * it the connection stays for the next check when `reuse_connection` is on.
 */
class TcpProbe extends SocketProbe {
  private received: Buffer = Buffer.alloc(0);

  constructor(
    private readonly target: ProbeTarget,
    private readonly settings: TcpCheckSettings,
    private readonly reuse: boolean,
  ) {
    super();
  }

  check(): Promise<CheckResult> {
    return new Promise((resolve) => {
      this.pending = resolve;
      this.received = Buffer.alloc(0);
      // A new connection sends once it is ready (after TLS); a kept one sends at once.
      if (!this.socket) this.connect();
      else if (this.settings.send) this.socket.write(this.settings.send);
    });
  }

  private connect(): net.Socket {
    const socket = connectTo(this.target, false, () => {
      if (this.settings.receive.length === 0) {
        this.close();
        this.settle('success');
        return;
      }
      if (this.settings.send) socket.write(this.settings.send);
    });
    this.socket = socket;
    socket.on(
      'data',
      guardedData(socket, 'TCP health check read', (chunk) => {
        this.received = Buffer.concat([this.received, chunk]);
        if (this.pending && payloadsFound(this.received, this.settings.receive)) {
          if (!this.reuse) this.close();
          this.settle('success');
        } else if (this.received.length > MAX_ANSWER_BYTES) {
          this.close();
          this.settle('active');
        }
      }),
    );
    socket.on('error', () => {});
    socket.on('close', () => {
      if (this.socket === socket) this.socket = null;
      this.settle('network');
    });
    return socket;
  }
}

/** The probe for one checker of one host. */
export function createProbe(
  target: ProbeTarget,
  checker: HttpCheckSettings | TcpCheckSettings | GrpcCheckSettings,
  reuse: boolean,
): Probe {
  switch (checker.kind) {
    case 'http':
      return checker.http2 ? new Http2Probe(target, checker, reuse) : new Http1Probe(target, checker, reuse);
    case 'tcp':
      return new TcpProbe(target, checker, reuse);
    case 'grpc':
      return new GrpcProbe(target, checker, reuse);
  }
}
