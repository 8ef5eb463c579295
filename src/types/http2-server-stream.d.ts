// @types/node 26 types a server's 'stream' event with the session-generic Http2Stream (its
// Http2ServerEventMap picks "stream" from Http2SessionEventMap), though node:http2 only ever
// emits ServerHttp2Stream there (docs: "Event: 'stream'" of Http2Server). These overloads,
// merged ahead of the library's, give listeners the type Node passes.
import type { IncomingHttpHeaders, ServerHttp2Stream } from 'node:http2';

type StreamListener = (
  stream: ServerHttp2Stream,
  headers: IncomingHttpHeaders,
  flags: number,
  rawHeaders: string[],
) => void;

declare module 'http2' {
  interface Http2Server {
    on(event: 'stream', listener: StreamListener): this;
    once(event: 'stream', listener: StreamListener): this;
  }
  interface Http2SecureServer {
    on(event: 'stream', listener: StreamListener): this;
    once(event: 'stream', listener: StreamListener): this;
  }
}
