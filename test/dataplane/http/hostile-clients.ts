import * as net from 'node:net';
import type { TestProxy } from '../../helpers/http-dataplane.js';

/**
 * Helpers shared by the hostile-client tests: a second listener in front of a test proxy
 * that keeps half-closed connections open as the real listener does (`allowHalfOpen`), a
 * raw client, and a reader of HTTP/1 responses off a byte stream.
 */

/** Listens on 127.0.0.1:0 with the production listener's half-open behaviour. */
export async function halfOpenFront(proxy: TestProxy): Promise<{ port: number; close(): void }> {
  const server = net.createServer({ allowHalfOpen: true }, (socket) => proxy.hcm.handle(socket));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { port: (server.address() as net.AddressInfo).port, close: () => server.close() };
}

/** A raw client socket that records what it receives and when the proxy closed it. */
export interface RawClient {
  socket: net.Socket;
  received(): Buffer;
  /** Resolves with true when the socket closed within `ms`, false otherwise. */
  closed(ms: number): Promise<boolean>;
  /** Resolves once `n` bytes or more arrived, or `ms` passed. */
  waitBytes(n: number, ms: number): Promise<Buffer>;
}

export async function rawClient(port: number, options: { allowHalfOpen?: boolean } = {}): Promise<RawClient> {
  const socket = net.connect({ port, host: '127.0.0.1', allowHalfOpen: options.allowHalfOpen ?? false });
  socket.on('error', () => {});
  const chunks: Buffer[] = [];
  let size = 0;
  const waiters = new Set<() => void>();
  let isClosed = false;
  socket.on('data', (c: Buffer) => {
    chunks.push(c);
    size += c.length;
    for (const w of waiters) w();
  });
  socket.on('close', () => {
    isClosed = true;
    for (const w of waiters) w();
  });
  await new Promise<void>((resolve, reject) => {
    socket.once('connect', resolve);
    socket.once('error', reject);
  });
  const until = (done: () => boolean, ms: number) =>
    new Promise<void>((resolve) => {
      if (done()) return resolve();
      const check = () => {
        if (!done()) return;
        clearTimeout(timer);
        waiters.delete(check);
        resolve();
      };
      const timer = setTimeout(() => {
        waiters.delete(check);
        resolve();
      }, ms);
      waiters.add(check);
    });
  return {
    socket,
    received: () => Buffer.concat(chunks),
    async closed(ms) {
      await until(() => isClosed, ms);
      return isClosed;
    },
    async waitBytes(n, ms) {
      await until(() => size >= n || isClosed, ms);
      return Buffer.concat(chunks);
    },
  };
}

export interface ParsedResponse {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/**
 * Reads consecutive HTTP/1 responses (content-length or chunked bodies) off `data`; `methods`
 * says which answer a HEAD (no body whatever the headers say). Stops at the first
 * incomplete response.
 */
export function parseResponses(data: Buffer, methods: string[] = []): ParsedResponse[] {
  const text = data.toString('latin1');
  const out: ParsedResponse[] = [];
  let pos = 0;
  while (pos < text.length) {
    const end = text.indexOf('\r\n\r\n', pos);
    if (end < 0) break;
    const lines = text.slice(pos, end).split('\r\n');
    const status = Number((lines[0] ?? '').split(' ')[1]);
    const headers: Record<string, string> = {};
    for (const line of lines.slice(1)) {
      const colon = line.indexOf(':');
      headers[line.slice(0, colon).toLowerCase()] = line.slice(colon + 1).trim();
    }
    let at = end + 4;
    let body = '';
    if (methods[out.length] === 'HEAD' || status === 204 || status === 304) {
      // no body
    } else if (headers['transfer-encoding'] === 'chunked') {
      for (;;) {
        const nl = text.indexOf('\r\n', at);
        if (nl < 0) return out;
        const size = Number.parseInt(text.slice(at, nl), 16);
        at = nl + 2;
        if (size === 0) {
          at += 2;
          break;
        }
        body += text.slice(at, at + size);
        at += size + 2;
      }
    } else {
      const length = Number(headers['content-length'] ?? 0);
      if (at + length > text.length) break;
      body = text.slice(at, at + length);
      at += length;
    }
    out.push({ status, headers, body });
    pos = at;
  }
  return out;
}
