/**
 * Services the ext_authz and ratelimit tests start on loopback: real gRPC servers
 * (`@grpc/grpc-js`) serving a unary method under the v2 and v3 paths, an HTTP authorizer,
 * raw HTTP/2 servers that answer garbage, and an upstream that greets the user the
 * authorizer named (the reference example's upstream service).
 */
import * as http from 'node:http';
import * as http2 from 'node:http2';
import type { AddressInfo } from 'node:net';
import * as grpc from '@grpc/grpc-js';
import fc from 'fast-check';
import { serviceMessageType } from '../../src/bootstrap/proto-root.js';

// biome-ignore lint/suspicious/noExplicitAny: decoded protobuf messages are walked by the tests
export type Message = Record<string, any>;

function codec(typeName: string) {
  const type = serviceMessageType(typeName);
  return {
    serialize: (value: Message) => Buffer.from(type.encode(type.fromObject(value)).finish()),
    deserialize: (bytes: Buffer) =>
      type.toObject(type.decode(bytes), {
        defaults: true,
        arrays: true,
        longs: Number,
        enums: String,
      }) as Message,
  };
}

/** A gRPC server answering `/<service>/<method>` for each path given, through `answer`. */
export async function unaryServer(
  paths: string[],
  requestType: string,
  responseType: string,
  answer: (request: Message, path: string, metadata: grpc.Metadata) => Message | grpc.ServiceError | 'hang',
): Promise<{ port: number; seen: Array<{ path: string; request: Message }>; close(): void }> {
  const server = new grpc.Server();
  const req = codec(requestType);
  const res = codec(responseType);
  const seen: Array<{ path: string; request: Message }> = [];
  for (const path of paths) {
    const definition = {
      call: {
        path,
        requestStream: false,
        responseStream: false,
        requestSerialize: req.serialize,
        requestDeserialize: req.deserialize,
        responseSerialize: res.serialize,
        responseDeserialize: res.deserialize,
      },
    } as grpc.ServiceDefinition;
    server.addService(definition, {
      call: (call: grpc.ServerUnaryCall<Message, Message>, callback: grpc.sendUnaryData<Message>) => {
        seen.push({ path, request: call.request });
        const out = answer(call.request, path, call.metadata);
        if (out === 'hang') return;
        if (out instanceof Error) callback(out);
        else callback(null, out);
      },
    });
  }
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (err, p) =>
      err ? reject(err) : resolve(p),
    ),
  );
  return { port, seen, close: () => server.forceShutdown() };
}

/** The reference example's users (examples/ext_authz/auth/users.json). */
export const USERS: Record<string, string> = { token1: 'user1', token2: 'user2', token3: 'user3' };

/** The user a `Bearer` token names, or undefined. */
export function bearerUser(authorization: string | undefined): string | undefined {
  const parts = (authorization ?? '').split(' ');
  return parts.length === 2 && parts[0] === 'Bearer' ? USERS[parts[1] as string] : undefined;
}

/** A raw HTTP/2 server: `respond` answers every stream as it likes (garbage, hangs, resets). */
export async function rawH2Server(
  respond: (stream: http2.ServerHttp2Stream) => void,
): Promise<{ port: number; close(): void }> {
  const server = http2.createServer();
  server.on('stream', (stream) => {
    stream.on('error', () => {});
    stream.resume();
    respond(stream);
  });
  server.on('sessionError', () => {});
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const sessions = new Set<http2.ServerHttp2Session>();
  server.on('session', (s) => {
    sessions.add(s);
    s.on('close', () => sessions.delete(s));
  });
  return {
    port: (server.address() as AddressInfo).port,
    close() {
      for (const s of sessions) s.destroy();
      server.close();
    },
  };
}

/** gRPC framing of `payload` (uncompressed), or of a length that lies. */
export function grpcFrame(payload: Buffer, length = payload.length): Buffer {
  const head = Buffer.alloc(5);
  head.writeUInt32BE(length, 1);
  return Buffer.concat([head, payload]);
}

/** A raw HTTP/2 answer: 200 `application/grpc`, `body` as given, then `trailers` (grpc-status 0 unless given). */
export function grpcAnswer(
  body: Buffer,
  trailers: Record<string, string> = { 'grpc-status': '0' },
): (stream: http2.ServerHttp2Stream) => void {
  return (stream) => {
    stream.respond({ ':status': 200, 'content-type': 'application/grpc' }, { waitForTrailers: true });
    stream.on('wantTrailers', () => stream.sendTrailers(trailers));
    stream.end(body);
  };
}

/** How a raw HTTP/2 authorizer answers one stream. */
export type Behaviour = (stream: http2.ServerHttp2Stream) => void;

/** Authorizers that misbehave, by what they do: each is an error to the ext_authz filters. */
export const MISBEHAVING_AUTHORIZERS: Record<string, Behaviour> = {
  'garbage bytes as the message': grpcAnswer(grpcFrame(Buffer.from([0xff, 0xff, 0xff, 0xff, 0x0f, 0x08]))),
  'a frame whose length lies': grpcAnswer(grpcFrame(Buffer.from([8, 0]), 100)),
  'no grpc-status': grpcAnswer(grpcFrame(Buffer.alloc(0)), {}),
  'an HTTP 500': (stream) => {
    stream.respond({ ':status': 500 });
    stream.end('oops');
  },
  'a reset stream': (stream) => stream.close(2),
  'a closed connection': (stream) => stream.session?.destroy(),
  'an answer past 1 MiB': grpcAnswer(grpcFrame(Buffer.alloc(2 << 20))),
};

/** Random gRPC answers for a fuzz run: any bytes, framed or not, with a grpc-status of any kind or none. */
export const randomGrpcAnswer: fc.Arbitrary<Behaviour> = fc
  .tuple(fc.uint8Array({ maxLength: 64 }), fc.boolean(), fc.constantFrom('0', '7', '14', 'x', ''))
  .map(([bytes, framed, status]) =>
    grpcAnswer(
      framed ? grpcFrame(Buffer.from(bytes)) : Buffer.from(bytes),
      status === '' ? {} : { 'grpc-status': status },
    ),
  );

/** A plain HTTP server on loopback, with what it saw. */
export async function httpServer(
  handler: http.RequestListener,
): Promise<{ port: number; seen: http.IncomingMessage[]; close(): void }> {
  const seen: http.IncomingMessage[] = [];
  const server = http.createServer((req, res) => {
    seen.push(req);
    handler(req, res);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    port: (server.address() as AddressInfo).port,
    seen,
    close() {
      server.closeAllConnections();
      server.close();
    },
  };
}

/** The example's upstream: `Hello <x-current-user> from behind Envoy!`. */
export function helloUpstream(): ReturnType<typeof httpServer> {
  return httpServer((req, res) => {
    req.resume();
    req.on('end', () => res.end(`Hello ${String(req.headers['x-current-user'])} from behind Envoy!`));
  });
}
