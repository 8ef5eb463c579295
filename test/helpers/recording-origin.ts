/** A raw HTTP/1.1 origin for tests that compare the bytes a proxy sends upstream. */
import * as net from 'node:net';

/** A request as it arrived: the head's lines (request line first), its framing and its body. */
export interface Recorded {
  lines: string[];
  chunked: boolean;
  body: string;
}

/** A raw HTTP/1.1 origin that records each complete request and answers `200 ok`. */
export interface RecordingOrigin {
  port: number;
  requests: Recorded[];
  /** Forgets the requests and drops every connection (and what a torn request left in it). */
  reset(): void;
  close(): void;
}

/** The body of a complete chunked message in `bytes` from `at`, and where it ends; null while incomplete. */
function chunkedBody(bytes: Buffer, at: number): { body: string; end: number } | null {
  let body = '';
  for (;;) {
    const line = bytes.indexOf('\r\n', at);
    if (line < 0) return null;
    const size = Number.parseInt(bytes.toString('latin1', at, line), 16);
    if (size === 0) {
      const end = bytes.indexOf('\r\n\r\n', line);
      return end < 0 ? null : { body, end: end + 4 };
    }
    if (bytes.length < line + 2 + size + 2) return null;
    body += bytes.toString('latin1', line + 2, line + 2 + size);
    at = line + 2 + size + 2;
  }
}

export async function recordingOrigin(): Promise<RecordingOrigin> {
  const requests: Recorded[] = [];
  const sockets = new Set<net.Socket>();
  const server = net.createServer((socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => {});
    let buffered = Buffer.alloc(0);
    socket.on('data', (chunk: Buffer) => {
      buffered = Buffer.concat([buffered, chunk]);
      for (;;) {
        const head = buffered.indexOf('\r\n\r\n');
        if (head < 0) return;
        const lines = buffered.toString('latin1', 0, head).split('\r\n');
        const chunked = lines.some((l) => /^transfer-encoding:\s*chunked/i.test(l));
        let body: string;
        let end: number;
        if (chunked) {
          const read = chunkedBody(buffered, head + 4);
          if (!read) return;
          ({ body, end } = read);
        } else {
          const length = Number(lines.find((l) => /^content-length:/i.test(l))?.split(':')[1] ?? 0);
          end = head + 4 + length;
          if (buffered.length < end) return;
          body = buffered.toString('latin1', head + 4, end);
        }
        requests.push({ lines, chunked, body });
        buffered = buffered.subarray(end);
        socket.write('HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok');
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const reset = () => {
    requests.length = 0;
    for (const s of sockets) s.destroy();
  };
  return {
    port: (server.address() as net.AddressInfo).port,
    requests,
    reset,
    close() {
      reset();
      server.close();
    },
  };
}
