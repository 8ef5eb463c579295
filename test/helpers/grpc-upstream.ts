/** gRPC upstreams for the gRPC filter tests: a @grpc/grpc-js server and a raw node:http2 one. */
import * as http from 'node:http';
import * as http2 from 'node:http2';
import type { AddressInfo } from 'node:net';
import * as grpc from '@grpc/grpc-js';

const identity = (b: Buffer) => b;

/** A gRPC method whose messages are raw bytes: no codec between the test and the wire. */
export function rawMethod(path: string, requestStream: boolean, responseStream: boolean) {
  return {
    path,
    requestStream,
    responseStream,
    requestSerialize: identity,
    requestDeserialize: identity,
    responseSerialize: identity,
    responseDeserialize: identity,
  };
}

/** A gRPC message frame: flag 0, big-endian length, payload. */
export function frame(payload: Buffer | string, flag = 0): Buffer {
  const body = typeof payload === 'string' ? Buffer.from(payload) : payload;
  const out = Buffer.alloc(5 + body.length);
  out[0] = flag;
  out.writeUInt32BE(body.length, 1);
  body.copy(out, 5);
  return out;
}

/** Splits a body into its frames. */
export function frames(body: Buffer): Array<{ flag: number; payload: Buffer }> {
  const out: Array<{ flag: number; payload: Buffer }> = [];
  let at = 0;
  while (at + 5 <= body.length) {
    const length = body.readUInt32BE(at + 1);
    out.push({ flag: body[at] as number, payload: body.subarray(at + 5, at + 5 + length) });
    at += 5 + length;
  }
  if (at !== body.length) throw new Error(`${body.length - at} bytes after the last whole frame`);
  return out;
}

const ECHO = { Echo: rawMethod('/test.Echo/Echo', false, false) };

/**
 * `/test.Echo/Echo` on a real grpc-js server: answers `echo:<request>`, or NOT_FOUND (5)
 * `no such thing` for the request `missing`. Remembers the metadata of each call.
 */
export async function echoServer(): Promise<{ port: number; seen: grpc.Metadata[]; close(): void }> {
  const server = new grpc.Server();
  const seen: grpc.Metadata[] = [];
  server.addService(ECHO, {
    Echo: (call: grpc.ServerUnaryCall<Buffer, Buffer>, done: grpc.sendUnaryData<Buffer>) => {
      seen.push(call.metadata);
      if (call.request.toString() === 'missing')
        done({ code: grpc.status.NOT_FOUND, details: 'no such thing' });
      else done(null, Buffer.concat([Buffer.from('echo:'), call.request]));
    },
  });
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (err, p) =>
      err ? reject(err) : resolve(p),
    ),
  );
  return { port, seen, close: () => server.forceShutdown() };
}

/**
 * A raw HTTP/2 gRPC-shaped upstream: a head, one message `partial`, then trailers with
 * grpc-status 2 and a message (what a server failing mid-call sends).
 */
export async function failingAfterDataServer(): Promise<{ port: number; close(): void }> {
  const server = http2.createServer();
  server.on('stream', (stream) => {
    stream.on('data', () => {});
    stream.on('end', () => {
      stream.respond({ ':status': 200, 'content-type': 'application/grpc' }, { waitForTrailers: true });
      stream.on('wantTrailers', () => stream.sendTrailers({ 'grpc-status': '2', 'grpc-message': 'broke' }));
      stream.end(frame('partial'));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { port: (server.address() as AddressInfo).port, close: () => server.close() };
}

/** A port nothing listens on. */
export async function closedPort(): Promise<number> {
  const s = http.createServer();
  await new Promise<void>((resolve) => s.listen(0, '127.0.0.1', resolve));
  const port = (s.address() as AddressInfo).port;
  await new Promise<void>((resolve) => s.close(() => resolve()));
  return port;
}

/** An HTTP/1.1 POST on a fresh connection; the body comes back as bytes. */
export function post(
  port: number,
  path: string,
  headers: Record<string, string>,
  body: Buffer | string,
): Promise<{ status: number; headers: http.IncomingHttpHeaders; body: Buffer }> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      { host: '127.0.0.1', port, method: 'POST', path, headers, agent: false, timeout: 5000 },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }),
        );
      },
    );
    req.on('timeout', () => req.destroy(new Error(`POST ${path}: no answer in 5 s`)));
    req.on('error', reject);
    req.end(body);
  });
}
