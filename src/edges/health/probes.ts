import * as http2 from 'node:http2';
import type * as net from 'node:net';
import { hostKey } from '../../../reducers/hosts.js';
import type { HealthCheckResult } from '../../../views/clusters/figures.js';
import { newStreamInfo } from '../../dataplane/access-log/stream-info.js';
import {
  BodyFramer,
  bodilessStatus,
  Framing,
  type ResponseHead,
  ResponseHeadParser,
} from '../../dataplane/codec/h1-parse.js';
import { withFlatHeaders } from '../../dataplane/codec/h2-headers.js';
import type { ConnectOptions } from '../../dataplane/pool/connect-options.js';
import { applyHeaderMutations } from '../../dataplane/router/header-mutation.js';
import type { Scope } from '../../stats/store.js';
import { dial } from '../../tls/upstream.js';
import type { GrpcCheckSettings, HttpCheckSettings, TcpCheckSettings } from './config.js';

/**
 * The verdict of one check: `success`; `degraded`, a pass whose answer said the host is
 * degraded; `active`, the host answered and the answer is a failure (a status outside the
 * expected ones, NOT_SERVING): the reference takes the host out at once; `network`, no answer
 * (refused, reset, closed, timed out): it counts toward `unhealthy_threshold`.
 */
export type CheckResult = HealthCheckResult;

/** Where a probe connects, and the cluster name that stands in for an unset host or authority. */
export interface ProbeTarget {
  ip: string;
  port: number;
  cluster: string;
  /** The cluster's bind, keep-alive and TLS settings: checks connect as its traffic does. */
  connect: ConnectOptions;
  /** `cluster.<name>.`, for the `ssl.` counters of TLS checks. */
  scope: Scope;
  /** Bumped when an HTTP check verifies `service_name` (the `verify_cluster` stat). */
  onVerifyCluster(): void;
}

/** Opens a check connection like the cluster's own; `onReady` once bytes may flow (after TLS). */
function connectTo(target: ProbeTarget, http2: boolean, onReady?: () => void): net.Socket {
  const o = target.connect;
  return dial(
    {
      ip: target.ip,
      port: target.port,
      localAddress: o.localAddress,
      localPort: o.localPort,
      keepAlive: o.keepAlive,
      keepAliveInitialDelayMs: o.keepAliveInitialDelayMs,
      tls: o.tls,
      scope: target.scope,
      http2,
    },
    onReady,
  );
}

/** One checker's connection to one host: a check at a time, the session times it out. */
export interface Probe {
  check(): Promise<CheckResult>;
  /** Drops the connection: after a timeout, with `reuse_connection` false, and at stop. */
  close(): void;
}

const USER_AGENT = 'proxy/HC';
/** The response header an upstream proxy sets to name the cluster it health-checked for. */
const HEALTHCHECKED_CLUSTER = 'x-proxy-upstream-healthchecked-cluster';
/** A passing answer with this header marks the host degraded (`/degraded_active_hc`). */
const DEGRADED = 'x-proxy-degraded';

function authorityOf(target: ProbeTarget, configured: string): string {
  return configured || target.cluster;
}

/** The reference's health checker evaluates header variables on a loopback connection of its own. */
const CHECK_ADDRESS = '127.0.0.1:0';

/**
 * The request headers of an HTTP check beyond the pseudo-headers (flat, names lowercase),
 * `request_headers_to_remove` then `_add` applied as the router applies them. Evaluated per
 * check, as a value may read the time.
 */
function checkHeaders(settings: HttpCheckSettings): string[] {
  const headers = ['user-agent', USER_AGENT];
  if (settings.headers) {
    const info = newStreamInfo(null, CHECK_ADDRESS, CHECK_ADDRESS);
    applyHeaderMutations(headers, [settings.headers], false, { info, host: null });
  }
  return headers;
}

function statusPasses(settings: HttpCheckSettings, status: number): boolean {
  return settings.expectedStatuses.some(([start, end]) => status >= start && status < end);
}

/** The verdict of an HTTP answer: expected status, and the cluster identity when `service_name` is set. */
function httpVerdict(
  settings: HttpCheckSettings,
  target: ProbeTarget,
  status: number,
  clusterHeader: string | string[] | undefined,
  degraded: boolean,
): CheckResult {
  if (!statusPasses(settings, status)) return 'active';
  if (settings.serviceName) {
    target.onVerifyCluster();
    const value = Array.isArray(clusterHeader) ? clusterHeader[0] : clusterHeader;
    if (!(value ?? '').startsWith(settings.serviceName)) return 'active';
  }
  return degraded ? 'degraded' : 'success';
}

/** The first value of `name` in a flat header list. */
function headerOf(headers: readonly string[], name: string): string | undefined {
  for (let i = 0; i < headers.length; i += 2) if (headers[i] === name) return headers[i + 1];
  return undefined;
}

/** How an HTTP/1 check response's body ends (a check sends GET, never HEAD). */
function framingOf(head: ResponseHead): Framing {
  if (bodilessStatus(head.status)) return Framing.None;
  if (head.chunked) return Framing.Chunked;
  return head.contentLength >= 0 ? Framing.Length : Framing.UntilClose;
}

/**
 * What the raw-socket probes share: the connection kept between checks, and the check
 * waiting for its verdict, settled once.
 */
abstract class SocketProbe implements Probe {
  protected socket: net.Socket | null = null;
  protected pending: ((result: CheckResult) => void) | null = null;

  abstract check(): Promise<CheckResult>;

  protected settle(result: CheckResult): void {
    const pending = this.pending;
    this.pending = null;
    pending?.(result);
  }

  close(): void {
    const socket = this.socket;
    this.socket = null;
    socket?.destroy();
  }
}

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
    socket.on('data', (chunk: Buffer) => {
      if (!this.pending) return;
      const result = this.read(chunk);
      if (result) this.settle(result);
    });
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
      this.answer = { head, body: new BodyFramer(framingOf(head), head.contentLength) };
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

/** One HTTP/2 (h2c) session per host, kept between checks when `reuse_connection` is on. */
class H2Session {
  private session: http2.ClientHttp2Session | null = null;

  constructor(private readonly target: ProbeTarget) {}

  /** The live session, connecting when there is none. */
  get(): http2.ClientHttp2Session {
    if (this.session && !this.session.closed && !this.session.destroyed) return this.session;
    const scheme = this.target.connect.tls ? 'https' : 'http';
    const session = http2.connect(`${scheme}://${hostKey(this.target.ip, this.target.port)}`, {
      createConnection: () => connectTo(this.target, true),
    });
    session.on('error', () => {});
    session.on('close', () => {
      if (this.session === session) this.session = null;
    });
    this.session = session;
    return session;
  }

  close(): void {
    this.session?.destroy();
    this.session = null;
  }
}

/** HTTP checks over HTTP/2 (`use_http2`, `codec_client_type: HTTP2`). */
class Http2Probe implements Probe {
  private readonly h2: H2Session;

  constructor(
    private readonly target: ProbeTarget,
    private readonly settings: HttpCheckSettings,
    private readonly reuse: boolean,
  ) {
    this.h2 = new H2Session(target);
  }

  check(): Promise<CheckResult> {
    return new Promise((resolve) => {
      let stream: http2.ClientHttp2Stream;
      try {
        stream = this.h2.get().request(
          {
            ':method': 'GET',
            ':path': this.settings.path,
            ':scheme': 'http',
            ':authority': authorityOf(this.target, this.settings.host),
            ...withFlatHeaders({}, checkHeaders(this.settings)),
          },
          { endStream: true },
        );
      } catch {
        resolve('network');
        return;
      }
      let status = 0;
      let clusterHeader: string | string[] | undefined;
      let degraded = false;
      stream.on('response', (headers) => {
        status = Number(headers[':status'] ?? 0);
        clusterHeader = headers[HEALTHCHECKED_CLUSTER];
        degraded = headers[DEGRADED] !== undefined;
      });
      stream.on('error', () => resolve('network'));
      stream.resume();
      stream.on('close', () => {
        if (status === 0 || stream.rstCode !== http2.constants.NGHTTP2_NO_ERROR) resolve('network');
        else resolve(httpVerdict(this.settings, this.target, status, clusterHeader, degraded));
        if (!this.reuse) this.h2.close();
      });
    });
  }

  close(): void {
    this.h2.close();
  }
}

/** `grpc.health.v1.HealthCheckRequest { string service = 1; }`, in a gRPC length-prefixed frame. */
function healthCheckRequestFrame(service: string): Buffer {
  const name = Buffer.from(service, 'utf8');
  const body =
    name.length === 0 ? Buffer.alloc(0) : Buffer.concat([Buffer.from([0x0a]), varint(name.length), name]);
  const frame = Buffer.alloc(5 + body.length);
  frame.writeUInt32BE(body.length, 1);
  body.copy(frame, 5);
  return frame;
}

function varint(n: number): Buffer {
  const bytes: number[] = [];
  let v = n;
  while (v > 0x7f) {
    bytes.push((v & 0x7f) | 0x80);
    v >>>= 7;
  }
  bytes.push(v);
  return Buffer.from(bytes);
}

const SERVING = 1;

/**
 * The `status` of a `HealthCheckResponse` in one uncompressed gRPC frame, or -1 when the
 * bytes are not one. Field 1 is a varint; unknown fields are skipped.
 */
function servingStatusOf(data: Buffer): number {
  if (data.length < 5 || data[0] !== 0) return -1;
  const length = data.readUInt32BE(1);
  if (data.length < 5 + length) return -1;
  let status = 0;
  let i = 5;
  const end = 5 + length;
  const readVarint = (): number => {
    let value = 0;
    let shift = 0;
    while (i < end) {
      const b = data[i++] as number;
      value += (b & 0x7f) * 2 ** shift;
      if ((b & 0x80) === 0) return value;
      shift += 7;
    }
    return -1;
  };
  while (i < end) {
    const key = readVarint();
    if (key < 0) return -1;
    const field = Math.floor(key / 8);
    const wire = key % 8;
    if (wire === 0) {
      const v = readVarint();
      if (field === 1) status = v;
    } else if (wire === 2) i += readVarint();
    else if (wire === 5) i += 4;
    else if (wire === 1) i += 8;
    else return -1;
  }
  return status;
}

/** `grpc.health.v1.Health/Check` over HTTP/2: passes on grpc-status 0 with status SERVING. */
class GrpcProbe implements Probe {
  private readonly h2: H2Session;

  constructor(
    private readonly target: ProbeTarget,
    private readonly settings: GrpcCheckSettings,
    private readonly reuse: boolean,
  ) {
    this.h2 = new H2Session(target);
  }

  check(): Promise<CheckResult> {
    return new Promise((resolve) => {
      let stream: http2.ClientHttp2Stream;
      try {
        stream = this.h2.get().request({
          ':method': 'POST',
          ':path': '/grpc.health.v1.Health/Check',
          ':scheme': 'http',
          ':authority': authorityOf(this.target, this.settings.authority),
          'content-type': 'application/grpc',
          te: 'trailers',
          'user-agent': USER_AGENT,
        });
      } catch {
        resolve('network');
        return;
      }
      let status = 0;
      let grpcStatus: string | undefined;
      const chunks: Buffer[] = [];
      stream.on('response', (headers) => {
        status = Number(headers[':status'] ?? 0);
        // A trailers-only answer carries grpc-status in the headers.
        if (headers['grpc-status'] !== undefined) grpcStatus = String(headers['grpc-status']);
      });
      stream.on('trailers', (trailers) => {
        if (trailers['grpc-status'] !== undefined) grpcStatus = String(trailers['grpc-status']);
      });
      stream.on('data', (chunk: Buffer) => chunks.push(chunk));
      stream.on('error', () => resolve('network'));
      stream.on('close', () => {
        if (status === 0) resolve('network');
        else if (status !== 200 || grpcStatus !== '0') resolve('active');
        else resolve(servingStatusOf(Buffer.concat(chunks)) === SERVING ? 'success' : 'active');
        if (!this.reuse) this.h2.close();
      });
      stream.end(healthCheckRequestFrame(this.settings.serviceName));
    });
  }

  close(): void {
    this.h2.close();
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
    socket.on('data', (chunk: Buffer) => {
      this.received = Buffer.concat([this.received, chunk]);
      if (this.pending && payloadsFound(this.received, this.settings.receive)) {
        if (!this.reuse) this.close();
        this.settle('success');
      }
    });
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
