import type { Scope } from '../../stats/store.js';
import type { GrpcStream, HoldLimit } from './grpc.js';
import { grpcBridgeStream } from './grpc-bridge.js';
import { grpcWebStream } from './grpc-web.js';
import type { HttpRequest, ResponseSink } from '../codec/request.js';

/** The gRPC HTTP filters, by the chain's order. */
export type GrpcFilterKind = 'grpc_http1_bridge' | 'grpc_web';

/**
 * Starts the chain's gRPC filters on a request: the stream the exchange then answers
 * through, or null when none of them takes the request. `scope` gives the routed cluster's
 * stats scope (null before or without one); `hold` what a filter holding the response may hold.
 */
export type GrpcStreamStarter = (
  req: HttpRequest,
  sink: ResponseSink,
  scope: () => Scope | null,
  hold: HoldLimit,
) => GrpcStream | null;

const START = { grpc_http1_bridge: grpcBridgeStream, grpc_web: grpcWebStream };

/**
 * The starter for the chain's gRPC filters, or null without any. With both, each sees the
 * request as the one before it left it (`grpc_web` first turns a gRPC-Web request into a gRPC
 * one the bridge then takes), and the response goes back through them in reverse order.
 */
export function grpcStreamStarter(kinds: readonly GrpcFilterKind[]): GrpcStreamStarter | null {
  if (kinds.length === 0) return null;
  if (kinds.length === 1) return START[kinds[0] as GrpcFilterKind];
  return (req, sink, scope, hold) => {
    const streams: GrpcStream[] = [];
    let outer = sink;
    for (const kind of kinds) {
      const stream = START[kind](req, outer, scope, hold);
      if (stream === null) continue;
      streams.push(stream);
      outer = stream.sink;
    }
    if (streams.length <= 1) return streams[0] ?? null;
    return {
      sink: outer,
      requestBody(chunk) {
        let out: Buffer | null = chunk;
        for (const s of streams) if (out !== null) out = s.requestBody(out);
        return out;
      },
      requestEnd: () => streams.every((s) => s.requestEnd()),
      trailers(trailers) {
        let status = 0;
        for (let i = streams.length - 1; i >= 0; i--) status = streams[i]?.trailers(trailers) || status;
        return status;
      },
    };
  };
}
