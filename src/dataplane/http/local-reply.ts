import { FLAG } from '../access-log/stream-info.js';
import type { ResponseSink } from '../codec/request.js';
import type { UpstreamFailure } from '../pool/types.js';

/** The reference's words for why an upstream attempt failed before any response. */
export const RESET_REASON: Record<UpstreamFailure, string> = {
  'connect-failure': 'connection failure',
  'connect-timeout': 'connection failure',
  overflow: 'overflow',
  reset: 'connection termination',
  'reused-reset': 'connection termination',
  'protocol-error': 'protocol error',
};

/** The response flag of each of `RESET_REASON`'s words. */
export const RESET_FLAG: Record<string, number> = {
  overflow: FLAG.UO,
  'connection failure': FLAG.UF,
  'connection termination': FLAG.UC,
  'protocol error': FLAG.UPE,
};

/** `%RESPONSE_CODE_DETAILS%` of each of `RESET_REASON`'s words, spaces made `_` as the reference's. */
export const RESET_DETAILS: Record<string, string> = {
  overflow: 'upstream_reset_before_response_started{overflow}',
  'connection failure': 'upstream_reset_before_response_started{connection_failure}',
  'connection termination': 'upstream_reset_before_response_started{connection_termination}',
  'protocol error': 'upstream_reset_before_response_started{protocol_error}',
};

/** The body of a 503 (or 502) about the upstream, in the reference's words. */
export function upstreamResetText(reason: string): string {
  return `upstream connect error or disconnect/reset before headers. reset reason: ${reason}`;
}

/** What a local reply sent, for the access log. */
export interface LocalReplySent {
  headers: string[];
  /** Body bytes written: 0 for a HEAD request or an empty body. */
  bodyBytes: number;
}

/**
 * Sends a response made by the proxy itself: a body of `contentType` (none for HEAD; null: `extra`
 * names it already), `extra` headers, our `server` header (none for '':
 * `server_header_transformation: PASS_THROUGH`). Nothing of it comes from or goes to an upstream.
 */
export function sendLocalReply(
  sink: ResponseSink,
  method: string,
  serverName: string,
  status: number,
  body: string | Buffer,
  extra: readonly string[] = [],
  contentType: string | null = 'text/plain',
): LocalReplySent {
  const bytes = typeof body === 'string' ? Buffer.from(body) : body;
  const headers =
    bytes.length > 0 && contentType !== null ? ['content-type', contentType, ...extra] : [...extra];
  if (serverName) headers.push('server', serverName);
  const noBody = method === 'HEAD' || bytes.length === 0;
  sink.writeHead(status, headers, bytes.length, noBody);
  if (noBody) return { headers, bodyBytes: 0 };
  sink.writeData(bytes);
  sink.end();
  return { headers, bodyBytes: bytes.length };
}
