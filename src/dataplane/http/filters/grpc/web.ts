import { type HttpRequest, headerValue, removeHeader, setHeader } from '../../../codec/request.js';
import { type ClusterScope, GrpcStatTracker } from '../../grpc.js';
import {
  CONTINUE,
  type DataStatus,
  type FilterStatus,
  type FilterStream,
  STOP_ITERATION,
  type StreamFilter,
} from '../api.js';

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
 * The `grpc_web` filter of one request. A gRPC-Web request (by its content type) goes upstream
 * as `application/grpc` with `te: trailers`, `grpc-accept-encoding: identity,deflate,gzip`, and
 * no length for a `-text` body, which is base64-decoded (a body that is not base64 is answered
 * 400, as the reference does). The response's content type becomes `application/grpc-web+proto`
 * (`-text+proto` when the client accepts text, every frame then base64-encoded on its own), its
 * length unknown, and the upstream's trailers a trailers frame (flag 0x80, `name:value\r\n`
 * lines) at the end of the body. Any other request passes untouched.
 */
export class GrpcWebFilter implements StreamFilter {
  private active = false;
  private textRequest = false;
  private textResponse = false;
  private stats: GrpcStatTracker | null = null;
  /** Base64 characters short of a whole group (request), bytes short of a whole frame (response). */
  private pendingText = '';
  private pendingFrame: Buffer = EMPTY;

  constructor(private readonly clusterScope: ClusterScope) {}

  decodeHeaders(stream: FilterStream): FilterStatus {
    const req = stream.req;
    const type = headerValue(req, 'content-type');
    if (type === undefined || !WEB_TYPES.has(type)) return CONTINUE;
    this.active = true;
    this.textRequest = TEXT_TYPES.has(type);
    const accept = headerValue(req, 'accept');
    this.textResponse = accept !== undefined && TEXT_TYPES.has(accept);
    rewriteRequest(req, this.textRequest);
    this.stats = GrpcStatTracker.forPath('grpc-web', req.path, () => this.clusterScope(stream.info));
    return CONTINUE;
  }

  decodeData(stream: FilterStream, chunk: Buffer, end: boolean): DataStatus {
    if (!this.textRequest) return CONTINUE;
    const text = this.pendingText + chunk.toString('latin1');
    const whole = text.length - (text.length % 4);
    this.pendingText = text.slice(whole);
    const decoded = whole === 0 ? EMPTY : decodeGroups(text.slice(0, whole));
    // Not base64, or ending short of a group: refused mid-request, as the reference does.
    if (decoded === null || (end && this.pendingText !== '')) {
      stream.sendLocalReply(400, BAD_GRPC_WEB_BODY);
      return STOP_ITERATION;
    }
    return decoded;
  }

  decodeTrailers(stream: FilterStream): FilterStatus {
    if (this.pendingText === '') return CONTINUE;
    stream.sendLocalReply(400, BAD_GRPC_WEB_BODY);
    return STOP_ITERATION;
  }

  encodeHeaders(_status: number, headers: string[], stream: FilterStream): FilterStatus {
    if (!this.active) return CONTINUE;
    this.stats?.charge(headers);
    setHeader(
      headers,
      'content-type',
      this.textResponse ? 'application/grpc-web-text+proto' : 'application/grpc-web+proto',
    );
    // The body changes length (base64, the trailers frame): sent as it comes.
    stream.responseLength = -1;
    return CONTINUE;
  }

  encodeData(_stream: FilterStream, chunk: Buffer): DataStatus {
    if (!this.textResponse) return CONTINUE;
    let data = this.pendingFrame.length === 0 ? chunk : Buffer.concat([this.pendingFrame, chunk]);
    let out = '';
    while (data.length >= 5) {
      const end = 5 + data.readUInt32BE(1);
      if (data.length < end) break;
      out += data.subarray(0, end).toString('base64');
      data = data.subarray(end);
    }
    // Copied: the chunk's memory may belong to the upstream's socket.
    this.pendingFrame = data.length === 0 ? EMPTY : Buffer.from(data);
    return out === '' ? EMPTY : Buffer.from(out, 'latin1');
  }

  encodeTrailers(_stream: FilterStream, trailers: string[]): DataStatus {
    if (!this.active) return CONTINUE;
    this.stats?.charge(trailers);
    let text = '';
    for (let i = 0; i < trailers.length; i += 2) text += `${trailers[i]}:${trailers[i + 1]}\r\n`;
    const payload = Buffer.from(text, 'latin1');
    const frame = Buffer.allocUnsafe(5 + payload.length);
    frame[0] = TRAILER_FLAG;
    frame.writeUInt32BE(payload.length, 1);
    payload.copy(frame, 5);
    // They are in the body now: the response ends without trailers.
    trailers.length = 0;
    return this.textResponse ? Buffer.from(frame.toString('base64'), 'latin1') : frame;
  }
}

/** The request as the upstream gets it: gRPC, asking for trailers, no length for a shrinking text body. */
function rewriteRequest(req: HttpRequest, textRequest: boolean): void {
  const h = req.headers;
  setHeader(h, 'content-type', 'application/grpc');
  setHeader(h, 'te', 'trailers');
  setHeader(h, 'grpc-accept-encoding', 'identity,deflate,gzip');
  if (textRequest) {
    removeHeader(h, 'content-length');
    req.contentLength = -1;
  }
}
