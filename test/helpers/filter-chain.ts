/** An HTTP filter chain run in process between recording ends, for tests of what filters do to a stream. */
import { newStreamInfo } from '../../src/dataplane/access-log/stream-info.js';
import type { HttpRequest } from '../../src/dataplane/codec/request.js';
import type { StreamFilter } from '../../src/dataplane/http/filters/api.js';
import type { FilterChainEnds } from '../../src/dataplane/http/filters/chain-ends.js';
import { FilterRunner } from '../../src/dataplane/http/filters/runner.js';

/** What reached either end of a chain run by `chainOf`. */
export interface ChainRecord {
  /** Body bytes the router got, piece by piece (empty pieces left out, as the router skips them). */
  upstream: Buffer[];
  /** The response head past the encoders, with the length the downstream was told. */
  head: { status: number; headers: string[]; length: number } | null;
  /** Response body bytes past the encoders (empty pieces left out, as the exchange skips them). */
  downstream: Buffer[];
  trailers: string[] | null;
  ended: boolean;
  reply: { status: number; body: string } | null;
}

/**
 * A request's chain of `filters` run by the real runner between ends that record, as the
 * exchange (src/dataplane/http/exchange.ts) would minus the sockets; `bufferLimit` per direction.
 */
export function chainOf(
  filters: StreamFilter[],
  req: HttpRequest,
  bufferLimit = 1024 * 1024,
): { runner: FilterRunner; out: ChainRecord; ends: FilterChainEnds } {
  const out: ChainRecord = {
    upstream: [],
    head: null,
    downstream: [],
    trailers: null,
    ended: false,
    reply: null,
  };
  const ends: FilterChainEnds = {
    req,
    info: newStreamInfo(req, '127.0.0.1:1', '127.0.0.1:2'),
    get ended() {
      return out.reply !== null;
    },
    router: {
      hit: null,
      routeCluster: null,
      perRoute: () => undefined,
      clearRouteCache: () => {},
      decodeHeaders: () => {},
      decodeData: (chunk) => {
        if (chunk.length > 0) out.upstream.push(chunk);
      },
      decodeTrailers: () => {},
    },
    bufferLimit,
    responseLength: -1,
    sendLocalReply(status, body) {
      out.reply = { status, body };
    },
    encodedHeaders(status, headers) {
      out.head = { status, headers, length: ends.responseLength };
    },
    encodedData(chunk, end) {
      if (chunk.length > 0) out.downstream.push(chunk);
      if (end) out.ended = true;
    },
    encodedTrailers(trailers) {
      out.trailers = trailers;
      out.ended = true;
    },
    decodeWatermark: () => {},
    encodeWatermark: () => {},
    decodeTooLarge: () => ends.sendLocalReply(413, 'Payload Too Large'),
    encodeTooLarge: () => ends.sendLocalReply(500, 'Internal Server Error'),
  };
  return { runner: new FilterRunner(filters, ends), out, ends };
}
