import type { Connection } from './connection.js';
import { trailerProblem } from './fields.js';
import { ERROR } from './frames.js';
import type { BaseStream } from './stream.js';

/* How a stream ends on the peer's side: END_STREAM on DATA or on trailers. */

/** The peer's END_STREAM: the message's DATA must add up to its content-length (RFC 9113 8.1.1). */
export function remoteEnd(s: Connection, stream: BaseStream, trailers: string[] | null): void {
  if (stream.contentLength >= 0 && stream.received !== stream.contentLength) {
    messagingError(s, stream, false);
    return;
  }
  stream.remoteClosed = true;
  stream.deliverEnd(trailers);
}

/**
 * DATA that disagrees with the content-length: a stream error, or for DATA beyond it (as
 * the reference does by default) a connection error.
 */
export function messagingError(s: Connection, stream: BaseStream, beyond: boolean): void {
  s.events.onMessagingError(stream);
  if (beyond && !s.options.streamErrorOnInvalidMessaging) s.connectionError(ERROR.PROTOCOL_ERROR);
  else s.reset(stream, ERROR.PROTOCOL_ERROR);
}

/** A second header block on an open stream: trailers, which must end it (RFC 9113 8.1). */
export function trailers(s: Connection, stream: BaseStream, fields: string[], end: boolean): void {
  if (stream.remoteClosed) {
    s.connectionError(ERROR.STREAM_CLOSED);
    return;
  }
  const problem = end ? trailerProblem(fields) : 'trailers without END_STREAM';
  if (problem !== null) {
    s.events.onMalformed(fields, problem);
    s.reset(stream, ERROR.PROTOCOL_ERROR);
    return;
  }
  remoteEnd(s, stream, fields);
}

/**
 * Trailers over the header list limits: the stream is reset, as the reference resets a stream
 * whose trailers exceed `max_request_headers_kb` or `max_headers_count`.
 */
export function trailerOverflow(s: Connection, stream: BaseStream): void {
  if (stream.remoteClosed) {
    s.connectionError(ERROR.STREAM_CLOSED);
    return;
  }
  s.events.onTrailerOverflow(stream);
  s.reset(stream, ERROR.INTERNAL_ERROR);
}
