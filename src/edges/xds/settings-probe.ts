import * as net from 'node:net';
import { type ManagementTls, secureSocket } from './management-tls.js';

/** The client connection preface and an empty SETTINGS frame (RFC 9113 3.4). */
const PREFACE = Buffer.concat([
  Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n', 'latin1'),
  Buffer.from([0, 0, 0, 4, 0, 0, 0, 0, 0]),
]);

/** A probe in flight: `cancel` ends it without a call back. */
export interface SettingsProbe {
  cancel(): void;
}

/** Where a gRPC target is: `host:port`, `[v6]:port`, or a unix socket (`unix:PATH`, `unix-abstract:NAME`). */
export function connectOptionsOf(target: string): net.NetConnectOpts {
  if (target.startsWith('unix:')) return { path: target.slice('unix:'.length) };
  if (target.startsWith('unix-abstract:')) return { path: `\0${target.slice('unix-abstract:'.length)}` };
  const colon = target.lastIndexOf(':');
  const host = target.slice(0, colon).replace(/^\[(.*)\]$/, '$1');
  return { host, port: Number(target.slice(colon + 1)) };
}

/**
 * Asks `target` (`host:port`, `[v6]:port`, a unix socket) whether it speaks HTTP/2: connects
 * (with `tls`, securing the connection and checking the peer first), sends the preface and
 * waits for the server's first frame to be SETTINGS, then closes. `done(null)` once it was;
 * `done(reason)` when the connection or its handshake failed, something else came, or nothing
 * within `deadlineMs`. The socket is the probe's own, so a server that accepts and says
 * nothing costs one connection closed at the deadline: grpc-js waits for those SETTINGS
 * without a deadline and keeps a dial it was told to drop open, so it cannot be the one to
 * find out.
 */
export function probeSettings(
  target: string,
  deadlineMs: number,
  tls: ManagementTls | null,
  done: (error: string | null) => void,
): SettingsProbe {
  const socket = net.connect(connectOptionsOf(target));
  let stream: net.Socket = socket;
  let ended = false;
  const end = (error: string | null) => {
    if (ended) return;
    ended = true;
    clearTimeout(timer);
    stream.destroy();
    socket.destroy();
    done(error);
  };
  const timer = setTimeout(
    () => end(`no HTTP/2 SETTINGS from ${target} within ${deadlineMs} ms`),
    deadlineMs,
  );
  timer.unref();
  let head = Buffer.alloc(0);
  const ask = (secured: net.Socket) => {
    stream = secured;
    secured.on('data', (chunk: Buffer) => {
      head = Buffer.concat([head, chunk]);
      if (head.length < 9) return;
      // The first frame a server sends is SETTINGS (type 4) on stream 0.
      const settings = head[3] === 4 && head.readUInt32BE(5) === 0;
      end(settings ? null : `${target} answered with no HTTP/2 SETTINGS frame`);
    });
    secured.on('error', (err) => end(`${target}: ${err.message}`));
    secured.on('close', () => end(`${target} closed the connection before its HTTP/2 SETTINGS`));
    secured.write(PREFACE);
  };
  socket.on('connect', () => {
    if (!tls) ask(socket);
    else
      secureSocket(socket, tls, 'h2').then(
        (secured) => (ended ? secured.destroy() : ask(secured)),
        (err: Error) => end(`${target}: ${err.message}`),
      );
  });
  socket.on('error', (err) => end(`${target}: ${err.message}`));
  if (!tls) socket.on('close', () => end(`${target} closed the connection before its HTTP/2 SETTINGS`));
  return {
    cancel() {
      ended = true;
      clearTimeout(timer);
      stream.destroy();
      socket.destroy();
    },
  };
}
