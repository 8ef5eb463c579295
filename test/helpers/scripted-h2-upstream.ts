/**
 * An HTTP/2 upstream written frame by frame, for tests of what no HTTP/2 server library would
 * send (a PUSH_PROMISE the client refused, a bad `:status`, pseudo-headers in trailers, a
 * window never opened). It speaks the preface and SETTINGS itself and hands each request's
 * HEADERS to the test's script, which answers with raw frames.
 */
import * as net from 'node:net';
import type { JsonObject } from '../../events/index.js';
import { hcmWithRoutes, httpBootstrap } from './bootstraps.js';
import { FLAG, FRAME, type Frame, frame, headerBlock, headersFrame, parseFrames } from './h2-frames.js';
import { type ProxyProcess, startProxyProcess } from './proxy-process.js';

const CLIENT_PREFACE_LENGTH = 24;

export interface ScriptedConnection {
  socket: net.Socket;
  /** Every frame the proxy sent on this connection so far. */
  frames(): Frame[];
  send(bytes: Buffer): void;
}

/** What answers the request whose HEADERS came on stream `id`, in raw frames. */
export type Script = (c: ScriptedConnection, id: number) => void;

export interface ScriptedH2Upstream {
  port: number;
  connections: ScriptedConnection[];
  /** The SETTINGS parameters (id to value) of the proxy's first SETTINGS frame on each connection. */
  settings(connection: number): Map<number, number>;
  close(): void;
}

/** Answers stream `id` with a plain 200 whose body is `ok`: the well-behaved upstream the tests come back to. */
export function answerOk(c: ScriptedConnection, id: number): void {
  c.send(
    Buffer.concat([
      headersFrame(
        id,
        [
          [':status', '200'],
          ['content-length', '2'],
        ],
        false,
      ),
      frame(FRAME.DATA, FLAG.END_STREAM, id, Buffer.from('ok')),
    ]),
  );
}

/**
 * Promises stream `id + 1` (a GET of /pushed) on stream `id`: server push, which the proxy's
 * pools refuse with `ENABLE_PUSH 0`, so the promise is a connection error (RFC 9113 8.4).
 */
export function pushPromise(c: ScriptedConnection, id: number): void {
  const promised = Buffer.alloc(4);
  promised.writeUInt32BE(id + 1);
  const fields = headerBlock([
    [':method', 'GET'],
    [':path', '/pushed'],
    [':scheme', 'http'],
    [':authority', 'a.test'],
  ]);
  c.send(frame(FRAME.PUSH_PROMISE, FLAG.END_HEADERS, id, Buffer.concat([promised, fields])));
}

/** A scripted upstream that answers every request with `answerOk` but the one a test scripts. */
export interface ScriptedNext {
  upstream: ScriptedH2Upstream;
  /** `script` answers the next request; the one after it is `answerOk`'s again. */
  answerNextWith(script: Script): void;
}

export async function scriptedNextRequest(): Promise<ScriptedNext> {
  let next: Script = answerOk;
  const upstream = await scriptedH2Upstream((c, id) => {
    const script = next;
    next = answerOk;
    script(c, id);
  });
  return {
    upstream,
    answerNextWith: (script) => {
      next = script;
    },
  };
}

/**
 * Listens on 127.0.0.1:0. Each connection gets the server's SETTINGS (`settings`: id and value
 * pairs), an ACK of the proxy's, and `onRequest(connection, streamId)` at each request HEADERS;
 * with `ackPings`, an ACK of each PING (without, PINGs go unanswered, as from a dead peer).
 */
export async function scriptedH2Upstream(
  onRequest: (c: ScriptedConnection, streamId: number) => void,
  settings: Array<[number, number]> = [],
  ackPings = false,
): Promise<ScriptedH2Upstream> {
  const connections: ScriptedConnection[] = [];
  const sockets = new Set<net.Socket>();
  const server = net.createServer((socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => {});
    let bytes = Buffer.alloc(0);
    let seen = 0;
    const frames = () => parseFrames(bytes.subarray(CLIENT_PREFACE_LENGTH));
    const c: ScriptedConnection = {
      socket,
      frames,
      send: (b) => {
        if (!socket.destroyed) socket.write(b);
      },
    };
    connections.push(c);
    const payload = Buffer.alloc(6 * settings.length);
    settings.forEach(([id, value], i) => {
      payload.writeUInt16BE(id, i * 6);
      payload.writeUInt32BE(value, i * 6 + 2);
    });
    c.send(frame(FRAME.SETTINGS, 0, 0, payload));
    socket.on('data', (chunk: Buffer) => {
      bytes = Buffer.concat([bytes, chunk]);
      const all = frames();
      for (const f of all.slice(seen)) {
        if (f.type === FRAME.SETTINGS && (f.flags & FLAG.ACK) === 0)
          c.send(frame(FRAME.SETTINGS, FLAG.ACK, 0));
        if (f.type === FRAME.HEADERS) onRequest(c, f.streamId);
        if (ackPings && f.type === FRAME.PING && (f.flags & FLAG.ACK) === 0)
          c.send(frame(FRAME.PING, FLAG.ACK, 0, f.payload));
      }
      seen = all.length;
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as net.AddressInfo).port,
    connections,
    settings(i) {
      const first = connections[i]
        ?.frames()
        .find((f) => f.type === FRAME.SETTINGS && (f.flags & FLAG.ACK) === 0);
      const found = new Map<number, number>();
      for (let at = 0; first && at + 6 <= first.payload.length; at += 6)
        found.set(first.payload.readUInt16BE(at), first.payload.readUInt32BE(at + 2));
      return found;
    },
    close() {
      server.close();
      for (const s of sockets) s.destroy();
    },
  };
}

/**
 * A proxy process whose every request goes, with a 5 s route timeout, to the HTTP/2 cluster `h2`
 * of one member: `upstream`.
 */
export function proxyToScripted(
  upstream: ScriptedH2Upstream,
  concurrency: number,
  http2Options: JsonObject = {},
): Promise<ProxyProcess> {
  const cluster = {
    name: 'h2',
    connect_timeout: '1s',
    http2_protocol_options: http2Options,
    load_assignment: {
      cluster_name: 'h2',
      endpoints: [
        {
          lb_endpoints: [
            {
              endpoint: { address: { socket_address: { address: '127.0.0.1', port_value: upstream.port } } },
            },
          ],
        },
      ],
    },
  };
  return startProxyProcess(
    httpBootstrap(
      [cluster],
      hcmWithRoutes([{ match: { prefix: '/' }, route: { cluster: 'h2', timeout: '5s' } }]),
    ),
    ['--concurrency', String(concurrency)],
  );
}
