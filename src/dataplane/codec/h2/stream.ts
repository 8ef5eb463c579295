import { ERROR } from './frames.js';

/** What a stream's user hears: the request's body and end, and the stream's close. */
export interface StreamHandler {
  onData(chunk: Buffer): void;
  /** The request is complete; `trailers` when it ended with a trailer block. */
  onEnd(trailers: string[] | null): void;
  /** The stream is gone: `code` is the RST_STREAM code (ours or the peer's), or -1 after a complete exchange. */
  onClose(code: number): void;
  /** `write` returned false earlier and the stream's queue has emptied. */
  onDrain(): void;
}

/** What a stream asks of its session. */
export interface StreamOwner {
  /** The stream has DATA (or its end) to send once windows allow. */
  ready(stream: BaseStream): void;
  reset(stream: BaseStream, code: number): void;
  /** The stream's user consumed `n` bytes: the peer may send that many more. */
  consumed(stream: BaseStream, n: number): void;
  /** The handler heard the peer's end (a client stream closes once its own end is out too). */
  ended(stream: BaseStream): void;
}

/** What a server stream asks beyond that: its response head sent. */
export interface ServerOwner extends StreamOwner {
  sendHeaders(
    stream: ServerStream,
    status: number,
    headers: readonly string[],
    endStream: boolean,
    contentLength?: number,
  ): void;
}

/** A queue's size from which `write` asks the writer to wait for `onDrain`. */
const HIGH_WATER = 64 * 1024;

/**
 * One stream of a session (RFC 9113 5.1), either role: its sending side queues DATA until the
 * peer's windows allow it; its receiving side holds received DATA while paused.
 */
export class BaseStream {
  handler: StreamHandler | null = null;
  /** END_STREAM came from the peer (half-closed remote). */
  remoteClosed = false;
  /** The response's end is queued: nothing more may be written. */
  localEnded = false;
  /** The END_STREAM frame went into the output. */
  endSent = false;
  /** In its session's list of streams with DATA to send. */
  readyQueued = false;
  closed = false;
  /** How much more DATA the peer may send, and what was consumed but not announced yet. */
  recvWindow: number;
  recvUnacked = 0;
  sendWindow: number;
  /** Declared request `content-length` (-1: none) and DATA bytes received. */
  contentLength = -1;
  received = 0;
  /** Response DATA waiting for window: buffers, the offset into the first, and the bytes left. */
  out: Buffer[] = [];
  outOffset = 0;
  outBytes = 0;
  /** Trailers to end the response with once its DATA is out; null: END_STREAM on DATA. */
  trailers: readonly string[] | null = null;
  private drainOwed = false;
  private paused = false;
  /** DATA received while paused, delivered on resume, then the end if it came. */
  private held: Buffer[] | null = null;
  private heldEnd = false;
  private heldTrailers: string[] | null = null;

  constructor(
    /** A client stream's id is given when it opens (0 while it waits for the peer's stream limit). */
    public id: number,
    private readonly owner: StreamOwner,
    recvWindow: number,
    sendWindow: number,
  ) {
    this.recvWindow = recvWindow;
    this.sendWindow = sendWindow;
  }

  /** Queues body bytes; false when the queue is long enough that the writer should wait for `onDrain`. */
  write(chunk: Buffer): boolean {
    if (this.closed || this.localEnded) return true;
    if (chunk.length > 0) {
      this.out.push(chunk);
      this.outBytes += chunk.length;
      this.owner.ready(this);
    }
    if (this.outBytes < HIGH_WATER) return true;
    this.drainOwed = true;
    return false;
  }

  /** Ends the response, with trailers when given (and non-empty). */
  end(trailers?: readonly string[] | null): void {
    if (this.closed || this.localEnded) return;
    this.localEnded = true;
    if (trailers && trailers.length > 0) this.trailers = trailers;
    this.owner.ready(this);
  }

  reset(code: number = ERROR.INTERNAL_ERROR): void {
    if (!this.closed) this.owner.reset(this, code);
  }

  /** Called by the session once queued bytes went out. */
  sent(): void {
    if (this.drainOwed && this.outBytes < HIGH_WATER / 2) {
      this.drainOwed = false;
      this.handler?.onDrain();
    }
  }

  /** Received DATA: to the handler, or held while paused. */
  deliver(chunk: Buffer): void {
    if (this.paused) {
      if (this.held === null) this.held = [chunk];
      else this.held.push(chunk);
      return;
    }
    this.handler?.onData(chunk);
    this.owner.consumed(this, chunk.length);
  }

  /** The request ended (END_STREAM), with its trailers if it had them. */
  deliverEnd(trailers: string[] | null): void {
    if (this.paused) {
      this.heldEnd = true;
      this.heldTrailers = trailers;
      return;
    }
    this.handler?.onEnd(trailers);
    this.owner.ended(this);
  }

  pause(): void {
    this.paused = true;
  }

  resume(): void {
    if (!this.paused) return;
    this.paused = false;
    const held = this.held;
    while (held !== null && held.length > 0) {
      if (this.paused || this.closed) return;
      const chunk = held.shift() as Buffer;
      this.handler?.onData(chunk);
      this.owner.consumed(this, chunk.length);
    }
    if (this.paused || this.closed) return;
    this.held = null;
    if (this.heldEnd) {
      this.heldEnd = false;
      this.handler?.onEnd(this.heldTrailers);
      this.owner.ended(this);
    }
  }

  /** Forgets queued bytes and tells the handler; called once by the session. */
  close(code: number): void {
    this.closed = true;
    this.out = [];
    this.outBytes = 0;
    this.held = null;
    const handler = this.handler;
    this.handler = null;
    handler?.onClose(code);
  }
}

/** A request/response stream of a server session: the response head is its own. */
export class ServerStream extends BaseStream {
  headersSent = false;

  constructor(
    id: number,
    private readonly server: ServerOwner,
    recvWindow: number,
    sendWindow: number,
  ) {
    super(id, server, recvWindow, sendWindow);
  }

  /** Sends an interim (1xx) head before the response's. */
  interim(status: number): void {
    if (this.closed || this.headersSent) return;
    this.server.sendHeaders(this, status, [], false);
  }

  /**
   * Sends the response head; `endStream` when there is no body. A `contentLength` of 0 or more
   * goes out as `content-length`, in place of any `headers` has.
   */
  respond(status: number, headers: readonly string[], endStream: boolean, contentLength = -1): void {
    if (this.closed || this.headersSent) return;
    this.headersSent = true;
    if (endStream) this.localEnded = true;
    this.server.sendHeaders(this, status, headers, endStream, contentLength);
  }
}

/** Closed streams remembered, to tell a late frame on a stream we reset (ignored) from a protocol error. */
const CLOSED_REMEMBERED = 1024;
export const CLOSED = 0;
export const RESET_BY_US = 1;

/** The most recent closed streams of a session, and whether we reset each. */
export class ClosedStreams {
  private readonly ids = new Map<number, number>();
  /**
   * The ids in the order they were first remembered, a ring whose next slot holds the oldest:
   * forgetting it is one lookup, where a Map's first key is found by walking past every
   * entry deleted before it (one per stream closed, at 100 streams in flight).
   */
  private readonly order = new Uint32Array(CLOSED_REMEMBERED);
  private next = 0;

  remember(id: number, how: number): void {
    const known = this.ids.get(id);
    if (known === RESET_BY_US) return;
    if (known === undefined) {
      if (this.ids.size === CLOSED_REMEMBERED) this.ids.delete(this.order[this.next] as number);
      this.order[this.next] = id;
      this.next = (this.next + 1) % CLOSED_REMEMBERED;
    }
    this.ids.set(id, how);
  }

  /** A frame on this stream is ignored: we reset it, and the peer may not have known yet (RFC 9113 5.4.2). */
  resetByUs(id: number): boolean {
    return this.ids.get(id) === RESET_BY_US;
  }

  wasClosed(id: number): boolean {
    return this.ids.has(id);
  }
}
