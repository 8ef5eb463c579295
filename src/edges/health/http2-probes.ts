import type { GrpcCheckSettings, HttpCheckSettings } from '../../config/health.js';
import {
  type ClientEvents,
  ClientSession,
  type ClientStream,
  type ResponseHandler,
} from '../../dataplane/codec/h2/client-session.js';
import { ERROR } from '../../dataplane/codec/h2/frames.js';
import { upstreamSessionOptions } from '../../dataplane/pool/h2-session-options.js';
import {
  authorityOf,
  type CheckResult,
  checkHeaders,
  connectTo,
  DEGRADED,
  HEALTHCHECKED_CLUSTER,
  httpVerdict,
  MAX_ANSWER_BYTES,
  type Probe,
  type ProbeTarget,
  USER_AGENT,
} from './probe.js';

/** The value of `name` in a flat `[name, value, ...]` list, undefined when absent. */
function fieldOf(flat: readonly string[], name: string): string | undefined {
  for (let i = 0; i < flat.length; i += 2) if (flat[i] === name) return flat[i + 1];
  return undefined;
}

/** A check's stream sees its head, body and trailers; each probe reads what it needs of them. */
type CheckHandler = Partial<ResponseHandler> & Pick<ResponseHandler, 'onClose'>;

/**
 * One HTTP/2 session per host (h2c, or TLS with ALPN h2), kept between checks when
 * `reuse_connection` is on. It runs on the codec the upstream pools use, with their limits.
 */
class H2Session {
  private session: ClientSession | null = null;

  constructor(private readonly target: ProbeTarget) {}

  /** The live session, connecting when there is none. */
  get(): ClientSession {
    if (this.session && !this.session.closed) return this.session;
    let session: ClientSession | null = null;
    const events: ClientEvents = {
      onMalformed() {},
      onMessagingError() {},
      onTrailerOverflow() {},
      onConnectionError() {},
      onGoAway() {},
      onClose: () => {
        if (this.session === session) this.session = null;
      },
    };
    session = new ClientSession(connectTo(this.target, true), upstreamSessionOptions(null), events);
    this.session = session;
    return session;
  }

  close(): void {
    this.session?.destroy();
    this.session = null;
  }
}

/** What the HTTP/2 and gRPC probes share: a session to the host, kept between checks with `reuse`. */
abstract class H2Probe implements Probe {
  private readonly h2: H2Session;

  constructor(
    protected readonly target: ProbeTarget,
    private readonly reuse: boolean,
  ) {
    this.h2 = new H2Session(target);
  }

  abstract check(): Promise<CheckResult>;

  /** A check's request on the session; null when none could be opened (a network failure). */
  protected request(head: string[], endStream: boolean, handler: CheckHandler): ClientStream | null {
    const all: ResponseHandler = {
      onHead: handler.onHead ?? (() => {}),
      onData: handler.onData ?? (() => {}),
      onEnd: handler.onEnd ?? (() => {}),
      onDrain: () => {},
      onClose: handler.onClose,
    };
    try {
      return this.h2.get().request(head, endStream, false, all);
    } catch {
      return null;
    }
  }

  /** A check ended: its session goes unless `reuse_connection` keeps it for the next. */
  protected checked(): void {
    if (!this.reuse) this.h2.close();
  }

  close(): void {
    this.h2.close();
  }
}

/** HTTP checks over HTTP/2 (`use_http2`, `codec_client_type: HTTP2`). */
export class Http2Probe extends H2Probe {
  constructor(
    target: ProbeTarget,
    private readonly settings: HttpCheckSettings,
    reuse: boolean,
  ) {
    super(target, reuse);
  }

  check(): Promise<CheckResult> {
    return new Promise((resolve) => {
      let status = 0;
      let clusterHeader: string | undefined;
      let degraded = false;
      const head = [
        ':method',
        'GET',
        ':scheme',
        'http',
        ':authority',
        authorityOf(this.target, this.settings.host),
      ];
      head.push(':path', this.settings.path, ...checkHeaders(this.settings));
      const stream = this.request(head, true, {
        onHead: (code, headers) => {
          status = code;
          clusterHeader = fieldOf(headers, HEALTHCHECKED_CLUSTER);
          degraded = fieldOf(headers, DEGRADED) !== undefined;
        },
        // -1: the exchange completed; any other code is a reset.
        onClose: (code) => {
          if (status === 0 || code !== -1) resolve('network');
          else resolve(httpVerdict(this.settings, this.target, status, clusterHeader, degraded));
          this.checked();
        },
      });
      if (stream === null) resolve('network');
    });
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
export class GrpcProbe extends H2Probe {
  constructor(
    target: ProbeTarget,
    private readonly settings: GrpcCheckSettings,
    reuse: boolean,
  ) {
    super(target, reuse);
  }

  check(): Promise<CheckResult> {
    return new Promise((resolve) => {
      let status = 0;
      let grpcStatus: string | undefined;
      const chunks: Buffer[] = [];
      let bytes = 0;
      const head = [
        ':method',
        'POST',
        ':scheme',
        'http',
        ':authority',
        authorityOf(this.target, this.settings.authority),
      ];
      head.push(':path', '/grpc.health.v1.Health/Check', 'content-type', 'application/grpc');
      head.push('te', 'trailers', 'user-agent', USER_AGENT);
      const stream = this.request(head, false, {
        onHead: (code, headers) => {
          status = code;
          // A trailers-only answer carries grpc-status in the headers.
          grpcStatus = fieldOf(headers, 'grpc-status');
        },
        onData: (chunk) => {
          chunks.push(chunk);
          bytes += chunk.length;
          // A health answer is a few bytes: one past the limit is no answer, and is not held.
          if (bytes > MAX_ANSWER_BYTES) {
            resolve('active');
            stream?.reset(ERROR.CANCEL);
          }
        },
        onEnd: (trailers) => {
          if (trailers !== null) grpcStatus = fieldOf(trailers, 'grpc-status') ?? grpcStatus;
        },
        onClose: () => {
          if (status === 0) resolve('network');
          else if (status !== 200 || grpcStatus !== '0') resolve('active');
          else resolve(servingStatusOf(Buffer.concat(chunks)) === SERVING ? 'success' : 'active');
          this.checked();
        },
      });
      if (stream === null) {
        resolve('network');
        return;
      }
      stream.write(healthCheckRequestFrame(this.settings.serviceName));
      stream.end();
    });
  }
}
