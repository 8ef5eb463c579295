import type { StreamInfo } from '../access-log/stream-info.js';
import { type HttpRequest, headerValue, type ResponseSink } from '../codec/request.js';
import type { DownstreamOwner } from './downstream.js';
import { appendVia } from './edge.js';
import type { FilterRunner } from './filters/runner.js';
import { grpcLocalReplyHead, isGrpcContentType } from './grpc.js';
import { sendLocalReply } from './local-reply.js';
import { rewriteLocalReply } from './local-reply-config.js';

/** What the proxy's own reply reads of its stream (the exchange, src/dataplane/http/exchange.ts). */
export interface ReplyingStream {
  readonly hcm: DownstreamOwner;
  readonly req: HttpRequest;
  readonly sink: ResponseSink;
  readonly info: StreamInfo;
  readonly filters: FilterRunner | null;
}

/**
 * Sends a response made by the proxy itself, never forwarded upstream, with the `via` any
 * response of the request gets. Its head passes every encoder filter's
 * `encodeHeaders` and its body their `encodeData`, as the reference's local replies pass the
 * encoder chain: neither can be held, but an encoder that rewrites bodies (the compressor)
 * sends its bytes in the body's place. Any gRPC request gets a gRPC answer, as from the
 * reference's router. Returns the status to count and log: a gRPC reply is a 200 (its status
 * is in `grpc-status`). The HCM's `local_reply_config` rewrites it first, as the reference's.
 */
export function sendStreamReply(
  stream: ReplyingStream,
  original: number,
  originalBody: string | Buffer,
  extra: string[] = [],
  grpcStatus?: number,
): number {
  const { hcm, req, info, filters } = stream;
  const via = hcm.spec.edge.via;
  const rewrite = hcm.spec.localReply;
  const headers = !via && filters === null && rewrite === null ? extra : extra.slice();
  let status = original;
  let body = originalBody;
  let contentType: string | undefined;
  if (rewrite !== null)
    ({ status, body, contentType } = rewriteLocalReply(rewrite, info, hcm.runtime, status, body, headers));
  if (via) appendVia(headers, via);
  const serverName = hcm.spec.serverHeader === 'PASS_THROUGH' ? '' : hcm.serverName;
  // Read here, not per request: the content type of every request would cost every request.
  if (isGrpcContentType(headerValue(req, 'content-type'))) {
    // A gRPC answer is a 200 (its status is in `grpc-status`) whose head ends it: no body.
    const head = grpcLocalReplyHead(serverName, status, body, headers, grpcStatus);
    filters?.encodeLocalHeaders(200, head);
    stream.sink.writeHead(200, head, 0, true);
    info.responseCode = 200;
    info.responseHeaders = head;
    return 200;
  }
  let typed: string | null | undefined = contentType;
  if (filters !== null) {
    const bytes = typeof body === 'string' ? Buffer.from(body) : body;
    // As the reference's, the encoders see the reply's type and length (a compressor decides by them).
    if (bytes.length > 0) {
      headers.unshift('content-type', contentType ?? 'text/plain');
      typed = null;
    }
    filters.ends.responseLength = bytes.length;
    filters.encodeLocalHeaders(status, headers);
    // A HEAD reply carries no body for the encoders to see.
    body = req.method !== 'HEAD' && bytes.length > 0 ? filters.encodeLocalData(bytes) : bytes;
  }
  const sent = sendLocalReply(stream.sink, req.method, serverName, status, body, headers, typed);
  info.responseCode = status;
  info.responseHeaders = sent.headers;
  info.bytesSent += sent.bodyBytes;
  return status;
}
