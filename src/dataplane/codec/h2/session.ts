import type * as net from 'node:net';
import type { SessionEvents, SessionOptions } from './connection.js';
import { trailerOverflow, trailers } from './ends.js';
import { requestFields } from './fields.js';
import { ERROR } from './frames.js';
import { BaseSession } from './session-base.js';
import { type BaseStream, CLOSED, RESET_BY_US, type ServerOwner, ServerStream } from './stream.js';

/**
 * An HTTP/2 server connection (RFC 9113): the peer's streams are requests handed to the user,
 * answered by responses. What it shares with a client (frames, windows, errors) is
 * `BaseSession`'s.
 */
export class ServerSession extends BaseSession implements ServerOwner {
  declare readonly events: SessionEvents;
  declare readonly streams: Map<number, ServerStream>;

  constructor(socket: net.Socket, options: SessionOptions, events: SessionEvents) {
    super(socket, options, events, true);
    this.sendSettings([]);
  }

  sendHeaders(
    stream: ServerStream,
    status: number,
    headers: readonly string[],
    endStream: boolean,
    contentLength = -1,
  ): void {
    if (this.dead || !this.queued(false)) return;
    this.headersFrame(stream.id, String(status), headers, endStream, contentLength);
    if (endStream) {
      stream.endSent = true;
      this.localDone(stream);
    }
    this.markDirty();
  }

  /** Our side of the stream is over: it closes, or (the request still coming) is reset with NO_ERROR (RFC 9113 8.1). */
  protected localDone(stream: BaseStream): void {
    if (!stream.remoteClosed) this.resetId(stream.id, ERROR.NO_ERROR);
    this.closeStream(stream, -1, stream.remoteClosed ? CLOSED : RESET_BY_US);
  }

  /** The request's end changes nothing: the stream lasts until its response is out. */
  ended(): void {}

  idle(id: number): boolean {
    return id > this.lastPeerStreamId;
  }

  /** A second block on a request: its trailers. */
  streamBlock(stream: BaseStream, fields: string[], end: boolean, overflow: boolean): void {
    if (overflow) trailerOverflow(this, stream);
    else trailers(this, stream, fields, end);
  }

  /** A new request, checked (RFC 9113 8.1.1) and within our limits before the user hears of it. */
  newStreamBlock(id: number, fields: string[], end: boolean, overflow: boolean): void {
    this.lastPeerStreamId = id;
    // RFC 9113 6.8: streams above our GOAWAY's last one are ignored.
    if (id > this.goAwayLastId) return;
    const max = this.options.maxConcurrentStreams;
    if (max !== null && this.streams.size >= max) {
      // Before our SETTINGS are acknowledged the peer may not know the limit yet.
      if (this.settingsAcked) this.connectionError(ERROR.PROTOCOL_ERROR);
      else this.resetId(id, ERROR.REFUSED_STREAM);
      return;
    }
    if (overflow) {
      const stream = this.openStream(id);
      if (end) stream.remoteClosed = true;
      this.events.onHeaderOverflow(stream, fields);
      return;
    }
    let request = requestFields(fields);
    // A declared length that no DATA will follow (RFC 9113 8.1.1).
    if (typeof request !== 'string' && end && request.contentLength > 0)
      request = 'content-length without DATA';
    if (typeof request === 'string') {
      this.resetId(id, ERROR.PROTOCOL_ERROR);
      this.events.onMalformed(fields, request);
      return;
    }
    const stream = this.openStream(id);
    if (end) stream.remoteClosed = true;
    stream.contentLength = request.contentLength;
    this.events.onRequest(stream, request, end);
  }

  private openStream(id: number): ServerStream {
    const stream = new ServerStream(id, this, this.options.initialWindowSize, this.peerInitialWindow);
    this.streams.set(id, stream);
    this.flood.streamsOpened += 1;
    return stream;
  }

  /** A reset before the response ended counts towards the rapid reset limit (CVE-2023-44487). */
  override peerReset(stream: BaseStream, code: number): void {
    const premature = !stream.endSent;
    this.closeStream(stream, code, CLOSED);
    if (premature && this.flood.prematureReset()) this.connectionError(ERROR.ENHANCE_YOUR_CALM);
  }

  /** No new streams come; the connection ends when those open are done. */
  peerGoAway(): void {
    this.closing = true;
    if (this.streams.size === 0) this.end();
  }
}
