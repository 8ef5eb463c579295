import type { Scope } from '../../stats/store.js';
import { GrpcStatTracker, type GrpcStream } from './grpc.js';
import {
  type HttpRequest,
  headerValue,
  type ResponseSink,
  removeHeader,
  setHeader,
} from '../codec/request.js';

/** The request content types the reference's v2 filter translates. */
const WEB_TYPES = new Set([
  'application/grpc-web',
  'application/grpc-web+proto',
  'application/grpc-web-text',
  'application/grpc-web-text+proto',
]);
const TEXT_TYPES = new Set(['application/grpc-web-text', 'application/grpc-web-text+proto']);

/** The flag byte of a gRPC-Web trailers frame. */
const TRAILER_FLAG = 0x80;
const EMPTY = Buffer.alloc(0);
/** Four-character base64 groups, padding allowed in any group (padded segments may follow one another). */
const BASE64_GROUPS = /^(?:[A-Za-z0-9+/]{2}(?:[A-Za-z0-9+/]{2}|[A-Za-z0-9+/]=|==))*$/;

/** The text of a request body the reference refuses (400). */
export const BAD_GRPC_WEB_BODY = 'Bad gRPC-web request, invalid base64 data.';

/** Decodes whole base64 groups; null when they are not base64. */
function decodeGroups(text: string): Buffer | null {
  if (!BASE64_GROUPS.test(text)) return null;
  // Node stops at the first padding: each padded segment is decoded on its own.
  const parts: Buffer[] = [];
  let start = 0;
  for (let i = 3; i < text.length; i += 4) {
    if (text.charCodeAt(i) !== 61 /* = */) continue;
    parts.push(Buffer.from(text.slice(start, i + 1), 'base64'));
    start = i + 1;
  }
  if (start < text.length) parts.push(Buffer.from(text.slice(start), 'base64'));
  return parts.length === 1 ? (parts[0] as Buffer) : Buffer.concat(parts);
}

/**
 * The `grpc_web` filter's side of one gRPC-Web request, sent upstream as `application/grpc`:
 * a `-text` request body is base64-decoded; the response's content type becomes
 * `application/grpc-web+proto` (`-text+proto` when the client accepts text, every frame then
 * base64-encoded on its own); the upstream's trailers become a trailers frame (flag 0x80,
 * `name:value\r\n` lines) at the end of the body.
 */
class WebStream implements GrpcStream, ResponseSink {
  /** Base64 characters short of a whole group (request), bytes short of a whole frame (response). */
  private pendingText = '';
  private pendingFrame: Buffer = EMPTY;

  constructor(
    private readonly inner: ResponseSink,
    private readonly stats: GrpcStatTracker | null,
    private readonly textRequest: boolean,
    private readonly textResponse: boolean,
  ) {}

  get sink(): ResponseSink {
    return this;
  }

  get headersSent(): boolean {
    return this.inner.headersSent;
  }

  requestBody(chunk: Buffer): Buffer | null {
    if (!this.textRequest) return chunk;
    const text = this.pendingText + chunk.toString('latin1');
    const whole = text.length - (text.length % 4);
    this.pendingText = text.slice(whole);
    return whole === 0 ? EMPTY : decodeGroups(text.slice(0, whole));
  }

  requestEnd(): boolean {
    return this.pendingText === '';
  }

  writeHead(status: number, headers: string[], contentLength: number, endStream: boolean): void {
    this.stats?.charge(headers);
    setHeader(
      headers,
      'content-type',
      this.textResponse ? 'application/grpc-web-text+proto' : 'application/grpc-web+proto',
    );
    // The body changes length (base64, the trailers frame): sent as it comes.
    this.inner.writeHead(status, headers, endStream ? contentLength : -1, endStream);
  }

  writeData(chunk: Buffer): boolean {
    if (!this.textResponse) return this.inner.writeData(chunk);
    let data = this.pendingFrame.length === 0 ? chunk : Buffer.concat([this.pendingFrame, chunk]);
    let ok = true;
    while (data.length >= 5) {
      const end = 5 + data.readUInt32BE(1);
      if (data.length < end) break;
      ok = this.inner.writeData(Buffer.from(data.subarray(0, end).toString('base64'), 'latin1')) && ok;
      data = data.subarray(end);
    }
    // Copied: the chunk's memory may belong to the upstream's socket.
    this.pendingFrame = data.length === 0 ? EMPTY : Buffer.from(data);
    return ok;
  }

  trailers(trailers: string[]): number {
    this.stats?.charge(trailers);
    let text = '';
    for (let i = 0; i < trailers.length; i += 2) text += `${trailers[i]}:${trailers[i + 1]}\r\n`;
    const payload = Buffer.from(text, 'latin1');
    const frame = Buffer.allocUnsafe(5 + payload.length);
    frame[0] = TRAILER_FLAG;
    frame.writeUInt32BE(payload.length, 1);
    payload.copy(frame, 5);
    this.inner.writeData(this.textResponse ? Buffer.from(frame.toString('base64'), 'latin1') : frame);
    return 0;
  }

  end(): void {
    this.inner.end();
  }

  reset(): void {
    this.inner.reset();
  }
}

/**
 * The gRPC-Web translation for `req` when its content type is one the filter takes, else
 * null. Rewrites the request as the upstream gets it: `content-type: application/grpc`,
 * `te: trailers`, `grpc-accept-encoding: identity,deflate,gzip`, and no length for a text
 * body (it shrinks when decoded).
 */
export function grpcWebStream(
  req: HttpRequest,
  sink: ResponseSink,
  scope: () => Scope | null,
): GrpcStream | null {
  const type = headerValue(req, 'content-type');
  if (type === undefined || !WEB_TYPES.has(type)) return null;
  const textRequest = TEXT_TYPES.has(type);
  const accept = headerValue(req, 'accept');
  const textResponse = accept !== undefined && TEXT_TYPES.has(accept);
  const h = req.headers;
  setHeader(h, 'content-type', 'application/grpc');
  setHeader(h, 'te', 'trailers');
  setHeader(h, 'grpc-accept-encoding', 'identity,deflate,gzip');
  if (textRequest) {
    removeHeader(h, 'content-length');
    req.contentLength = -1;
  }
  const stats = GrpcStatTracker.forPath('grpc-web', req.path, scope);
  return new WebStream(sink, stats, textRequest, textResponse);
}
