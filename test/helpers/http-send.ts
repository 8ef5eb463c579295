/** Requests with headers exactly as written (node:http, a fresh connection each), and an upstream that counts them. */
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';

/** A response as the client saw it. */
export interface Answer {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: string;
}

/** One request on a fresh connection, headers as given. */
export function send(
  port: number,
  method: string,
  path: string,
  headers: Record<string, string> = {},
  body = '',
): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      { host: '127.0.0.1', port, method, path, headers, agent: false, timeout: 5000 },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () =>
          resolve({
            status: res.statusCode ?? 0,
            headers: res.headers,
            body: Buffer.concat(chunks).toString(),
          }),
        );
      },
    );
    req.on('timeout', () => req.destroy(new Error(`${method} ${path}: no answer in 5 s`)));
    req.on('error', reject);
    req.end(body);
  });
}

/** An upstream that answers every request 200 and remembers the paths it saw. */
export async function countingUpstream(): Promise<{ server: http.Server; port: number; seen: string[] }> {
  const seen: string[] = [];
  const server = http.createServer((req, res) => {
    seen.push(`${req.method} ${req.url}`);
    req.resume();
    req.on('end', () => res.end('upstream'));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { server, port: (server.address() as AddressInfo).port, seen };
}
