/**
 * The Node peer of the data-plane benchmark: the smallest reasonable reverse proxy in Node,
 * a `node:http` server forwarding every request through an undici `Pool`.
 * Usage: `node node-undici-proxy.js <upstream origin>`; prints `listening <port>` when ready.
 */
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import { type Dispatcher, Pool } from 'undici';

/** Connection-scoped headers a proxy must not forward (undici rejects most of them anyway). */
const HOP_BY_HOP = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
]);

function endToEnd(headers: Record<string, string | string[] | undefined>): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value !== undefined && !HOP_BY_HOP.has(name)) out[name] = value;
  }
  return out;
}

const origin = process.argv[2];
if (!origin) {
  process.stderr.write('usage: node-undici-proxy <upstream origin, e.g. http://127.0.0.1:8080>\n');
  process.exit(2);
}
const pool = new Pool(origin, { connections: 128 });

const server = http.createServer({ keepAliveTimeout: 60_000 }, (req, res) => {
  const method = (req.method ?? 'GET') as Dispatcher.HttpMethod;
  pool
    .request({
      path: req.url ?? '/',
      method,
      headers: endToEnd(req.headers),
      body: method === 'GET' || method === 'HEAD' ? null : req,
    })
    .then(({ statusCode, headers, body }) => {
      res.writeHead(statusCode, endToEnd(headers));
      body.pipe(res);
    })
    .catch((err: Error) => {
      res.writeHead(502, { 'content-type': 'text/plain' }).end(`upstream error: ${err.message}\n`);
    });
});
server.listen(0, '127.0.0.1', () => {
  process.stdout.write(`listening ${(server.address() as AddressInfo).port}\n`);
});
