import type { Priority } from '../../../reducers/settings/cluster.js';
import type { ClusterRuntime, UpstreamHost } from '../../upstream/types.js';
import type { ClusterTraffic } from './cluster-traffic.js';
import type { Connector } from './connector.js';

/** What the router sends upstream: the request head, already rewritten. */
export interface UpstreamRequestHead {
  method: string;
  path: string;
  authority: string;
  /** Flat `[name, value, ...]`, lowercase names, no hop-by-hop headers. */
  headers: string[];
  /** -1 when unknown: HTTP/1 upstream requests then use chunked encoding. */
  contentLength: number;
  hasBody: boolean;
  /**
   * The request may end with trailers (a gRPC or `te: trailers` request with a body): an
   * HTTP/2 upstream stream then stays open after the body for them. Set only when true.
   */
  trailers?: boolean;
}

/** Why an upstream attempt failed before any response. */
export type UpstreamFailure =
  | 'connect-failure'
  | 'connect-timeout'
  | 'overflow'
  | 'reset'
  | 'protocol-error'
  /** Closed before any response byte on a connection that had served a request before. */
  | 'reused-reset';

/** The router's side of an upstream attempt; the pool calls these exactly in this order. */
export interface UpstreamHandler {
  /** A connection (or HTTP/2 stream) is ready: body writes go straight to the wire now. */
  onUpstreamReady(request: UpstreamRequest): void;
  /** The attempt failed before response headers. */
  onUpstreamFailure(reason: UpstreamFailure): void;
  onUpstreamHead(status: number, headers: string[], contentLength: number): void;
  onUpstreamData(chunk: Buffer): void;
  /** The response's trailers (HTTP/2 only; flat, lowercase names), just before its end. */
  onUpstreamTrailers?(trailers: string[]): void;
  onUpstreamEnd(): void;
  /** The upstream reset or closed after the response head (the body is cut short). */
  onUpstreamReset(): void;
}

/** An attempt as the pool tracks it; `abort` is safe at any point. */
export interface UpstreamRequest {
  write(chunk: Buffer): boolean;
  /** Ends the request body, with the downstream's trailers when it sent some (HTTP/2 sends them). */
  end(trailers?: readonly string[]): void;
  abort(): void;
  /** Backpressure from the downstream side. */
  pause(): void;
  resume(): void;
  /** Called when the upstream side can take more request body after `write` returned false. */
  onWritable: (() => void) | null;
  /** `ip:port` of the local end of the connection carrying it, once ready; '' over a unix socket. */
  localAddress(): string;
}

/** What a pool needs to open connections and count them. */
export interface PoolContext {
  cluster: ClusterRuntime;
  host: UpstreamHost;
  traffic: ClusterTraffic;
  connector: Connector;
  /** The route's `priority`: whose breaker counts the request while it waits. Default DEFAULT. */
  priority?: Priority;
}

/** A per-host connection pool (HTTP/1.1 or HTTP/2). */
export interface ConnectionPool {
  /** `fresh`: open a new connection for it (when the breaker allows) instead of reusing one. */
  request(
    head: UpstreamRequestHead,
    handler: UpstreamHandler,
    pc: PoolContext,
    fresh?: boolean,
  ): UpstreamRequest;
  /** Closes idle connections, and the others as their requests finish. */
  drain(): void;
  /** Closes everything now. */
  destroy(): void;
}
