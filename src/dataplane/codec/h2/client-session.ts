import type * as net from 'node:net';
import type { CodecEvents, SessionOptions } from './connection.js';
import { remoteEnd, trailerOverflow, trailers } from './ends.js';
import { responseFields } from './fields.js';
import { ERROR, MAX_WINDOW, PREFACE, SETTING } from './frames.js';
import { BaseSession } from './session-base.js';
import { BaseStream, CLOSED, type StreamHandler } from './stream.js';

/** What a request's user hears: the response head, then what every stream's handler hears. */
export interface ResponseHandler extends StreamHandler {
  /** The final response head (1xx heads are not passed on); `endStream`: no body follows. */
  onHead(status: number, headers: string[], contentLength: number, endStream: boolean): void;
}

/** What a client session tells its user. */
export interface ClientEvents extends CodecEvents {
  /**
   * The peer's GOAWAY: no new streams; the streams above `lastStreamId` were never processed
   * (RFC 9113 6.8) and are closed with REFUSED_STREAM right after, so they are safe to retry.
   */
  onGoAway(lastStreamId: number, code: number): void;
}

/** A request stream: its head is sent when the peer's stream limit lets it open. */
export class ClientStream extends BaseStream {
  declare handler: ResponseHandler | null;
  /** The final response head came: a further block is trailers. */
  headed = false;
  /** The handler heard the response's end. */
  endHeard = false;

  constructor(
    private readonly session: ClientSession,
    /** The request head, flat, its pseudo-fields first. */
    readonly head: readonly string[],
    /** A HEAD request: the response's content-length describes a body that is not sent. */
    readonly headOnly: boolean,
  ) {
    super(0, session, session.options.initialWindowSize, 0);
  }

  /** DATA before the response head is malformed (RFC 9113 8.1). */
  override deliver(chunk: Buffer): void {
    if (this.headed) super.deliver(chunk);
    else this.session.reset(this, ERROR.PROTOCOL_ERROR);
  }

  override deliverEnd(trailers: string[] | null): void {
    if (this.headed) super.deliverEnd(trailers);
    else this.session.reset(this, ERROR.PROTOCOL_ERROR);
  }
}

/**
 * An HTTP/2 client connection (RFC 9113) on a socket the caller connected (TLS with ALPN h2,
 * or prior knowledge): our streams are requests, odd ids in order, at most as many open as
 * the peer's SETTINGS allow (the rest wait); server push is off and a PUSH_PROMISE is a
 * connection error. Responses are checked as strictly as requests are by the server.
 */
export class ClientSession extends BaseSession {
  declare readonly events: ClientEvents;
  declare readonly streams: Map<number, ClientStream>;
  private nextId = 1;
  /** Requests waiting for the peer's stream limit, in order. */
  private readonly waiting: ClientStream[] = [];

  constructor(socket: net.Socket, options: SessionOptions, events: ClientEvents) {
    super(socket, options, events, false);
    this.writer.bytes(PREFACE, 0, PREFACE.length);
    this.sendSettings([[SETTING.ENABLE_PUSH, 0]]);
  }

  /** A request; `endStream` when it has no body. Closed at once (REFUSED_STREAM) on a closing session. */
  request(
    head: readonly string[],
    endStream: boolean,
    headOnly: boolean,
    handler: ResponseHandler,
  ): ClientStream {
    this.reader.keepalive?.beforeStream();
    const stream = new ClientStream(this, head, headOnly);
    stream.handler = handler;
    stream.localEnded = endStream;
    this.waiting.push(stream);
    this.openWaiting();
    return stream;
  }

  /** Opens waiting requests while the peer's limit allows. */
  private openWaiting(): void {
    if (this.closed) {
      this.refuseWaiting(ERROR.REFUSED_STREAM);
      return;
    }
    while (this.waiting.length > 0 && this.streams.size < this.peerMaxStreams) {
      const stream = this.waiting.shift() as ClientStream;
      if (stream.closed) continue;
      if (this.nextId > MAX_WINDOW) {
        // Stream ids are spent: the user opens another connection for what waits.
        this.waiting.unshift(stream);
        this.close();
        return;
      }
      this.open(stream);
      if (this.dead) return;
    }
  }

  private open(stream: ClientStream): void {
    if (!this.queued(false)) return;
    stream.id = this.nextId;
    this.nextId += 2;
    stream.sendWindow = this.peerInitialWindow;
    this.streams.set(stream.id, stream);
    this.flood.streamsOpened += 1;
    // A request whose end is all it has to send ends on its HEADERS.
    const end = stream.localEnded && stream.outBytes === 0 && stream.trailers === null;
    this.headersFrame(stream.id, null, stream.head, end);
    if (end) stream.endSent = true;
    else if (stream.localEnded || stream.outBytes > 0) super.ready(stream);
    this.markDirty();
  }

  private refuseWaiting(code: number): void {
    for (const stream of this.waiting.splice(0)) if (!stream.closed) stream.close(code);
  }

  override flush(): void {
    if (this.waiting.length > 0) this.openWaiting();
    super.flush();
  }

  /** A stream not open yet queues its DATA until it opens. */
  override ready(stream: BaseStream): void {
    if (stream.id !== 0) super.ready(stream);
  }

  /** A stream not open yet is only dropped: the peer never heard of it. */
  override reset(stream: BaseStream, code: number): void {
    if (stream.id === 0) {
      if (!stream.closed) stream.close(code);
      return;
    }
    super.reset(stream, code);
  }

  override closeStream(stream: BaseStream, code: number, how: number): void {
    super.closeStream(stream, code, how);
    // A place under the peer's limit came free.
    if (this.waiting.length > 0) this.markDirty();
  }

  protected override closeAll(code: number): void {
    super.closeAll(code);
    this.refuseWaiting(code);
  }

  /** Our END_STREAM went out: the stream is done if the response already ended. */
  protected localDone(stream: BaseStream): void {
    if ((stream as ClientStream).endHeard) this.closeStream(stream, -1, CLOSED);
  }

  /** The response ended: done, or (the request still going) cancelled, as the peer needs no more of it. */
  ended(stream: BaseStream): void {
    (stream as ClientStream).endHeard = true;
    if (stream.closed) return;
    if (stream.endSent) this.closeStream(stream, -1, CLOSED);
    else this.reset(stream, ERROR.CANCEL);
  }

  /** Only our own (odd, already used) ids are other than idle: the peer opens no streams. */
  idle(id: number): boolean {
    return id % 2 === 0 || id >= this.nextId;
  }

  /** The response head (after any 1xx), or its trailers. */
  streamBlock(s: BaseStream, fields: string[], end: boolean, overflow: boolean): void {
    const stream = s as ClientStream;
    if (stream.headed) {
      if (overflow) trailerOverflow(this, stream);
      else trailers(this, stream, fields, end);
      return;
    }
    const head = responseFields(fields);
    let problem = typeof head === 'string' ? head : null;
    if (overflow) problem = 'response head over the header list limits';
    // An informational head is not passed on: the final one follows, so it may not end the stream.
    else if (typeof head !== 'string' && head.status < 200 && end)
      problem = 'informational head with END_STREAM';
    if (typeof head === 'string' || problem !== null) {
      this.events.onMalformed(fields, problem ?? 'malformed');
      this.reset(stream, ERROR.PROTOCOL_ERROR);
      return;
    }
    if (head.status < 200) return;
    // A HEAD request's or a 204/304's content-length describes no body here (RFC 9110 8.6).
    if (!stream.headOnly && head.status !== 204 && head.status !== 304) {
      if (end && head.contentLength > 0) {
        this.events.onMalformed(fields, 'content-length without DATA');
        this.reset(stream, ERROR.PROTOCOL_ERROR);
        return;
      }
      stream.contentLength = head.contentLength;
    }
    stream.headed = true;
    // The list less `:status` is the head's fields: moved down in place, not copied.
    fields.shift();
    fields.shift();
    stream.handler?.onHead(head.status, fields, head.contentLength, end);
    if (end && !stream.closed) remoteEnd(this, stream, null);
  }

  /** A server opens no streams here (push is off): a HEADERS on one is a connection error. */
  newStreamBlock(): void {
    this.connectionError(ERROR.PROTOCOL_ERROR);
  }

  peerGoAway(lastStreamId: number, code: number): void {
    this.closing = true;
    this.events.onGoAway(lastStreamId, code);
    for (const stream of [...this.streams.values()])
      if (stream.id > lastStreamId) this.closeStream(stream, ERROR.REFUSED_STREAM, CLOSED);
    this.refuseWaiting(ERROR.REFUSED_STREAM);
    if (this.streams.size === 0 && !this.dead) this.end();
  }

  /** Closes the socket now: every stream is closed (CANCEL). */
  destroy(): void {
    this.socket.destroy();
  }
}
