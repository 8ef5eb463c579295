import type { StreamInfo } from '../../access-log/stream-info.js';
import type { HttpRequest } from '../../codec/request.js';
import type { RouteHit } from './api.js';

/**
 * The chain's last decoder, the router filter (src/dataplane/http/filters/router/route.ts): it
 * holds the route the filters before it read, and takes the request once every one passed it.
 */
export interface ChainRouter {
  /** The route the table matched for the request as it is now; null for none. */
  readonly hit: RouteHit | null;
  /** The cluster the route sends to (the first of weighted clusters), or null. */
  readonly routeCluster: string | null;
  perRoute(configType: string, name?: string): unknown;
  clearRouteCache(): void;
  decodeHeaders(): void;
  decodeData(chunk: Buffer, end: boolean): void;
  decodeTrailers(trailers: string[]): void;
}

/**
 * What a request's filters run between: the request and its record, the router below the
 * decoders and the downstream below the encoders. The exchange (src/dataplane/http/exchange.ts)
 * is the downstream end and holds the router; this keeps the chain's iteration out of both.
 */
export interface FilterChainEnds {
  readonly req: HttpRequest;
  readonly info: StreamInfo;
  /** True once the request was answered or reset: nothing more runs. */
  readonly ended: boolean;
  readonly router: ChainRouter;
  sendLocalReply(status: number, body: string, headers?: string[], grpcStatus?: number): void;
  /** The listener's `per_connection_buffer_limit_bytes`: what the filters of one direction may hold. */
  readonly bufferLimit: number;
  /** The response body's declared length, -1 when unknown; an encoder may set -1. */
  responseLength: number;
  /** The response passed every encoder: the downstream gets it. */
  encodedHeaders(status: number, headers: string[]): void;
  encodedData(chunk: Buffer, end: boolean): void;
  encodedTrailers(trailers: string[]): void;
  /** Flow control while filters hold more than the limit: stop (true) or resume reading the sender. */
  decodeWatermark(above: boolean): void;
  encodeWatermark(above: boolean): void;
  /** A filter's buffer outgrew the limit: 413 for the request, 500 (or a reset) for the response. */
  decodeTooLarge(): void;
  encodeTooLarge(): void;
}
