/**
 * A reply of the HTTP/1 codec itself, which no stream carries here (a request it could not
 * parse, a head too large, a refused CONNECT or upgrade, a header timeout), rewritten by HCM
 * `local_reply_config` as the reference's are: its codec hands them to the connection manager's
 * `sendLocalReply`, whose mappers apply. See docs/data-plane.md, "Local replies".
 */
import type * as net from 'node:net';
import { FLAG, joinHostPort, newStreamInfo, type StreamInfo } from '../access-log/stream-info.js';
import { reasonPhrase } from '../codec/h1-status.js';
import type { DownstreamOwner } from './downstream.js';
import { rewriteLocalReply } from './local-reply-config.js';

/**
 * The reply's status (after the rewrite), its bytes (the connection's last) and the stream info
 * its access log line reads, as the reference logs the stream its codec answered. The mappers
 * see a stream with no request (a `header_filter` never matches), the status and `flags` (`DPE`
 * for a protocol error).
 */
export function codecReply(
  hcm: DownstreamOwner,
  socket: net.Socket,
  original: number,
  text: string,
  flags: number,
): { status: number; bytes: string; info: StreamInfo } {
  let status = original;
  // A protocol error's body is its status text, as the reference's codec sends a local reply
  // of `CodeUtility::toString(code)`; a timeout's carries its own words.
  let body: string | Buffer = flags & FLAG.DPE ? reasonPhrase(original) : text ? `${text}\n` : '';
  let contentType = 'text/plain';
  const headers: string[] = [];
  const info = newStreamInfo(
    null,
    joinHostPort(socket.remoteAddress, socket.remotePort),
    joinHostPort(socket.localAddress, socket.localPort),
  );
  // The HTTP/1 codec speaks HTTP/1.1 until a head says otherwise, as the reference's does.
  info.codecProtocol = 'HTTP/1.1';
  info.flags = flags;
  info.details = codecDetails(original, text, flags);
  const rewrite = hcm.spec.localReply;
  if (rewrite !== null) {
    ({ status, body, contentType } = rewriteLocalReply(rewrite, info, hcm.runtime, status, body, headers));
  }
  info.responseCode = status;
  info.bytesSent = Buffer.byteLength(body);
  let head = `HTTP/1.1 ${status} ${reasonPhrase(status)}\r\ncontent-length: ${info.bytesSent}\r\n`;
  if (body.length > 0) head += `content-type: ${contentType}\r\n`;
  // As every local reply: the reference's codec answers through its connection manager's.
  if (hcm.spec.serverHeader !== 'PASS_THROUGH') head += `server: ${hcm.serverName}\r\n`;
  for (let i = 0; i < headers.length; i += 2) head += `${headers[i]}: ${headers[i + 1]}\r\n`;
  // A string in, a string out: the rewrite keeps the codec's text or formats a new one.
  return { status, bytes: `${head}connection: close\r\n\r\n${body}`, info };
}

/** `%RESPONSE_CODE_DETAILS%` of a codec reply, in the reference's words; '' for a refused CONNECT or upgrade. */
function codecDetails(status: number, text: string, flags: number): string {
  if (status === 431) return 'http1.headers_too_large';
  if (flags & FLAG.DPE) return 'http1.codec_error';
  if (status === 408) return text === 'stream timeout' ? 'stream_idle_timeout' : 'request_header_timeout';
  return '';
}
