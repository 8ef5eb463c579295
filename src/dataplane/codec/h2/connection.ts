import type * as net from 'node:net';
import type { RequestFields } from './fields.js';
import type { FrameWriter } from './frames.js';
import type { HpackDecoder, HpackEncoder } from './hpack.js';
import type { KeepaliveOptions } from './keepalive.js';
import type { FloodCounter, FloodKind, FloodLimits } from './limits.js';
import type { BaseStream, ClosedStreams, ServerStream } from './stream.js';

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
  /** `connection_keepalive`: PINGs and their timeout; absent: none sent. */
  keepalive?: KeepaliveOptions | null;
}

/** What a session of either role tells its user. */
export interface CodecEvents {
  /** A message refused as malformed (RFC 9113 8.1.1), its stream reset: the decoded fields and why. */
  onMalformed(fields: readonly string[], reason: string): void;
  /** A message's DATA disagreed with its content-length (the stream or connection is ended). */
  onMessagingError(stream: BaseStream): void;
  /** A message whose trailers are over the header list limits, its stream then reset. */
  onTrailerOverflow(stream: BaseStream): void;
  /** The session sent GOAWAY for the peer's fault (`flood` when a flood limit was hit). */
  onConnectionError(code: number, flood: FloodKind | null): void;
  /** The socket closed: every stream is closed. */
  onClose(): void;
  /** No PING ACK came within `connection_keepalive`'s timeout: the connection is being closed. */
  onKeepaliveTimeout?(): void;
}

/** What a server session tells its user. */
export interface SessionEvents extends CodecEvents {
  /** A new request; the user sets `stream.handler`. */
  onRequest(stream: ServerStream, request: RequestFields, endStream: boolean): void;
  onMessagingError(stream: ServerStream): void;
  onTrailerOverflow(stream: ServerStream): void;
  /**
   * A request whose head is over the header list limits: answered 431 by the user. `fields`:
   * those the decoder kept before the limit, for the access log line.
   */
  onHeaderOverflow(stream: ServerStream, fields: readonly string[]): void;
}

/**
 * What the frame handlers (`inbound.ts`, `control.ts`, `ends.ts`) read and call of the session
 * they serve: its state, its output and the errors it raises. `BaseSession` implements it,
 * with what differs by role (header blocks, resets, GOAWAY, idle ids) left to each role.
 */
export interface Connection {
  readonly socket: net.Socket;
  readonly options: SessionOptions;
  readonly events: CodecEvents;
  readonly streams: Map<number, BaseStream>;
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
  peerMaxStreams: number;
  sendWindow: number;
  /** A connection error was sent or the socket is gone: input is ignored. */
  readonly dead: boolean;
  connectionError(code: number, flood?: FloodKind | null): void;
  reset(stream: BaseStream, code: number): void;
  resetId(id: number, code: number): void;
  closeStream(stream: BaseStream, code: number, how: number): void;
  queued(control: boolean): boolean;
  markDirty(): void;
  ready(stream: BaseStream): void;
  consumed(stream: BaseStream, n: number): void;
  connectionConsumed(n: number): void;
  idle(id: number): boolean;
  /** `overflow`: the block is over the header list limits (its list holds only its start). */
  streamBlock(stream: BaseStream, fields: string[], end: boolean, overflow: boolean): void;
  newStreamBlock(id: number, fields: string[], end: boolean, overflow: boolean): void;
  peerReset(stream: BaseStream, code: number): void;
  peerGoAway(lastStreamId: number, code: number): void;
}
