import * as http2 from 'node:http2';
import type * as net from 'node:net';
import type { ConnectOptions } from '../../dataplane/pool/connect-options.js';
import type { Scope } from '../../stats/store.js';
import { dial } from '../../tls/upstream.js';
import type { GrpcCheckSettings, HttpCheckSettings, TcpCheckSettings } from './config.js';

/**
 * The verdict of one check: `success`; `degraded`, a pass whose answer said the host is
 * degraded; `active`, the host answered and the answer is a failure (a status outside the
 * expected ones, NOT_SERVING): the reference takes the host out at once; `network`, no answer
 * (refused, reset, closed, timed out): it counts toward `unhealthy_threshold`.
 */
export type CheckResult = 'success' | 'degraded' | 'active' | 'network';

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

/** The request headers of an HTTP check beyond the pseudo-headers, `request_headers_to_add` applied. */
function checkHeaders(settings: HttpCheckSettings): Record<string, string | string[]> {
  const headers: Record<string, string | string[]> = { 'user-agent': USER_AGENT };
  for (const { name, value, append } of settings.headersToAdd) {
    const present = headers[name];
    if (append && present !== undefined)
      headers[name] = [...(Array.isArray(present) ? present : [present]), value];
    else headers[name] = value;
  }
  for (const name of settings.headersToRemove) delete headers[name];
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

/** Where one HTTP/1 response ends, once its head is parsed. */
type BodyEnd = { kind: 'length'; at: number } | { kind: 'chunked'; from: number } | { kind: 'close' };

/** A parsed response head: the status, the identity header, and how the body ends. */
interface ResponseHead {
  status: number;
  cluster: string | undefined;
  degraded: boolean;
  close: boolean;
  body: BodyEnd;
}

const HEAD_LIMIT = 64 * 1024;

/** The head of an HTTP/1 response at the start of `data`, null while incomplete; throws on garbage. */
function parseResponseHead(data: Buffer): ResponseHead | null {
  let start = 0;
  for (;;) {
    const end = data.indexOf('\r\n\r\n', start, 'latin1');
    if (end < 0) {
      if (data.length - start > HEAD_LIMIT) throw new Error('response head too long');
      return null;
    }
    const lines = data.toString('latin1', start, end).split('\r\n');
    const match = /^HTTP\/1\.[01] (\d{3})/.exec(lines[0] ?? '');
    if (!match) throw new Error('not an HTTP/1 response');
    const status = Number(match[1]);
    // An interim answer (100 Continue) is followed by the real one.
    if (status >= 100 && status < 200) {
      start = end + 4;
      continue;
    }
    let length = -1;
    let chunked = false;
    let close = lines[0]?.startsWith('HTTP/1.0') === true;
    let cluster: string | undefined;
    let degraded = false;
    for (let i = 1; i < lines.length; i++) {
      const line = lines[i] as string;
      const colon = line.indexOf(':');
      if (colon <= 0) continue;
      const name = line.slice(0, colon).trim().toLowerCase();
      const value = line.slice(colon + 1).trim();
      if (name === 'content-length') length = Number(value);
      else if (name === 'transfer-encoding') chunked = value.toLowerCase().includes('chunked');
      else if (name === 'connection') close = value.toLowerCase().includes('close');
      else if (name === HEALTHCHECKED_CLUSTER) cluster = value;
      else if (name === DEGRADED) degraded = true;
    }
    const bodyAt = end + 4;
    let body: BodyEnd;
    if (status === 204 || status === 304) body = { kind: 'length', at: bodyAt };
    else if (chunked) body = { kind: 'chunked', from: bodyAt };
    else if (length >= 0) body = { kind: 'length', at: bodyAt + length };
    else body = { kind: 'close' };
    return { status, cluster, degraded, close: close || body.kind === 'close', body };
  }
}

/** Whether a chunked body starting at `from` is complete in `data` (last chunk and trailers included). */
function chunkedBodyDone(data: Buffer, from: number): boolean {
  let at = from;
  for (;;) {
    const eol = data.indexOf('\r\n', at, 'latin1');
    if (eol < 0) return false;
    const size = Number.parseInt(data.toString('latin1', at, eol).split(';')[0] as string, 16);
    if (Number.isNaN(size)) throw new Error('bad chunk size');
    if (size === 0) {
      // Trailers, if any, end with an empty line.
      if (data.length >= eol + 4 && data.toString('latin1', eol + 2, eol + 4) === '\r\n') return true;
      return data.indexOf('\r\n\r\n', eol, 'latin1') >= 0;
    }
    at = eol + 2 + size + 2;
    if (data.length < at) return false;
  }
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
 * request is built once and the response is only parsed as far as a check needs, because at
 * a thousand hosts per second the general HTTP client cost several times more CPU.
 */
class Http1Probe extends SocketProbe {
  private readonly request: Buffer;
  private received: Buffer = Buffer.alloc(0);
  private head: ResponseHead | null = null;

  constructor(
    private readonly target: ProbeTarget,
    private readonly settings: HttpCheckSettings,
    private readonly reuse: boolean,
  ) {
    super();
    const lines = [`GET ${settings.path} HTTP/1.1`, `host: ${authorityOf(target, settings.host)}`];
    for (const [name, value] of Object.entries(checkHeaders(settings))) {
      for (const v of Array.isArray(value) ? value : [value]) lines.push(`${name}: ${v}`);
    }
    if (!reuse) lines.push('connection: close');
    this.request = Buffer.from(`${lines.join('\r\n')}\r\n\r\n`, 'latin1');
  }

  check(): Promise<CheckResult> {
    return new Promise((resolve) => {
      this.pending = resolve;
      this.received = Buffer.alloc(0);
      this.head = null;
      (this.socket ?? this.connect()).write(this.request);
    });
  }

  private connect(): net.Socket {
    const socket = connectTo(this.target, false);
    this.socket = socket;
    socket.on('data', (chunk: Buffer) => {
      if (!this.pending) return;
      this.received = this.received.length === 0 ? chunk : Buffer.concat([this.received, chunk]);
      try {
        this.head ??= parseResponseHead(this.received);
        const head = this.head;
        if (!head) return;
        const body = head.body;
        if (
          body.kind === 'length'
            ? this.received.length < body.at
            : body.kind === 'close' || !chunkedBodyDone(this.received, body.from)
        )
          return;
        if (head.close || !this.reuse) this.close();
        this.settle(httpVerdict(this.settings, this.target, head.status, head.cluster, head.degraded));
      } catch {
        this.close();
        this.settle('network');
      }
    });
    socket.on('error', () => {});
    socket.on('close', () => {
      if (this.socket === socket) this.socket = null;
      // A body that runs to the close is complete now; anything else was cut short.
      const head = this.head;
      if (head && head.body.kind === 'close')
        this.settle(httpVerdict(this.settings, this.target, head.status, head.cluster, head.degraded));
      else this.settle('network');
    });
    return socket;
  }
}

/** One HTTP/2 (h2c) session per host, kept between checks when `reuse_connection` is on. */
class H2Session {
  private session: http2.ClientHttp2Session | null = null;

  constructor(private readonly target: ProbeTarget) {}

  /** The live session, connecting when there is none. */
  get(): http2.ClientHttp2Session {
    if (this.session && !this.session.closed && !this.session.destroyed) return this.session;
    const host = this.target.ip.includes(':') ? `[${this.target.ip}]` : this.target.ip;
    const scheme = this.target.connect.tls ? 'https' : 'http';
    const session = http2.connect(`${scheme}://${host}:${this.target.port}`, {
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
            ...checkHeaders(this.settings),
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
