import type { RequestFields } from './fields.js';
import type { FrameWriter } from './frames.js';
import type { HpackDecoder, HpackEncoder } from './hpack.js';
import type { FloodCounter, FloodKind, FloodLimits } from './limits.js';
import type { ClosedStreams, ServerStream } from './stream.js';

export interface SessionOptions {
  /** Our SETTINGS: the decoder's table, the stream limit (null: none sent), windows, header list. */
  headerTableSize: number;
  maxConcurrentStreams: number | null;
  initialWindowSize: number;
  connectionWindowSize: number;
  maxHeaderListSize: number;
  maxHeadersCount: number;
  /** A request found malformed after its head (its DATA overran content-length) resets only its stream. */
  streamErrorOnInvalidMessaging: boolean;
  limits: FloodLimits;
}

/** What a session tells its user. */
export interface SessionEvents {
  /** A new request; the user sets `stream.handler`. */
  onRequest(stream: ServerStream, request: RequestFields, endStream: boolean): void;
  /** A request refused as malformed (RFC 9113 8.1.1), its stream reset: the decoded fields and why. */
  onMalformed(fields: readonly string[], reason: string): void;
  /** A request's DATA disagreed with its content-length (the stream or connection is ended). */
  onMessagingError(stream: ServerStream): void;
  /** A request whose head is over the header list limits: answered 431 by the user. */
  onHeaderOverflow(stream: ServerStream): void;
  /** A request whose trailers are over the header list limits, its stream then reset. */
  onTrailerOverflow(stream: ServerStream): void;
  /** The session sent GOAWAY for the peer's fault (`flood` when a flood limit was hit). */
  onConnectionError(code: number, flood: FloodKind | null): void;
  /** The socket closed: every stream is closed. */
  onClose(): void;
}

/**
 * What the frame handlers (`inbound.ts`, `control.ts`, `ends.ts`) read and call of the session
 * they serve: its state, its output and the errors it raises. `ServerSession` implements it.
 */
export interface Connection {
  readonly options: SessionOptions;
  readonly events: SessionEvents;
  readonly streams: Map<number, ServerStream>;
  readonly gone: ClosedStreams;
  readonly writer: FrameWriter;
  readonly decoder: HpackDecoder;
  readonly encoder: HpackEncoder;
  readonly flood: FloodCounter;
  lastPeerStreamId: number;
  goAwayLastId: number;
  settingsAcked: boolean;
  peerMaxFrame: number;
  peerInitialWindow: number;
  sendWindow: number;
  /** A connection error was sent or the socket is gone: input is ignored. */
  readonly dead: boolean;
  connectionError(code: number, flood?: FloodKind | null): void;
  reset(stream: ServerStream, code: number): void;
  resetId(id: number, code: number): void;
  closeStream(stream: ServerStream, code: number, how: number): void;
  openStream(id: number): ServerStream;
  queued(control: boolean): boolean;
  markDirty(): void;
  ready(stream: ServerStream): void;
  consumed(stream: ServerStream, n: number): void;
  connectionConsumed(n: number): void;
  peerGoAway(): void;
}
