import * as http2 from 'node:http2';
import { hostKey } from '../../../reducers/settings/endpoints.js';
import type { GrpcCheckSettings, HttpCheckSettings } from '../../config/health.js';
import { upstreamH2Settings } from '../../dataplane/codec/h2-client-settings.js';
import { withFlatHeaders } from '../../dataplane/codec/h2-headers.js';
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

/** One HTTP/2 (h2c) session per host, kept between checks when `reuse_connection` is on. */
class H2Session {
  private session: http2.ClientHttp2Session | null = null;

  constructor(private readonly target: ProbeTarget) {}

  /** The live session, connecting when there is none. */
  get(): http2.ClientHttp2Session {
    if (this.session && !this.session.closed && !this.session.destroyed) return this.session;
    const scheme = this.target.connect.tls ? 'https' : 'http';
    const session = http2.connect(`${scheme}://${hostKey(this.target.ip, this.target.port)}`, {
      settings: upstreamH2Settings(),
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
  protected request(
    headers: http2.OutgoingHttpHeaders,
    options?: http2.ClientSessionRequestOptions,
  ): http2.ClientHttp2Stream | null {
    try {
      return this.h2.get().request(headers, options);
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
      const stream = this.request(
        {
          ':method': 'GET',
          ':path': this.settings.path,
          ':scheme': 'http',
          ':authority': authorityOf(this.target, this.settings.host),
          ...withFlatHeaders({}, checkHeaders(this.settings)),
        },
        { endStream: true },
      );
      if (stream === null) {
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
        this.checked();
      });
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
      const stream = this.request({
        ':method': 'POST',
        ':path': '/grpc.health.v1.Health/Check',
        ':scheme': 'http',
        ':authority': authorityOf(this.target, this.settings.authority),
        'content-type': 'application/grpc',
        te: 'trailers',
        'user-agent': USER_AGENT,
      });
      if (stream === null) {
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
      let bytes = 0;
      stream.on('data', (chunk: Buffer) => {
        chunks.push(chunk);
        bytes += chunk.length;
        // A health answer is a few bytes: one past the limit is no answer, and is not held.
        if (bytes > MAX_ANSWER_BYTES) {
          resolve('active');
          stream.close(http2.constants.NGHTTP2_CANCEL);
        }
      });
      stream.on('error', () => resolve('network'));
      stream.on('close', () => {
        if (status === 0) resolve('network');
        else if (status !== 200 || grpcStatus !== '0') resolve('active');
        else resolve(servingStatusOf(Buffer.concat(chunks)) === SERVING ? 'success' : 'active');
        this.checked();
      });
      stream.end(healthCheckRequestFrame(this.settings.serviceName));
    });
  }
}
