/**
 * The real proxy (two threads) run out of file descriptors (`prlimit --nofile`) by a flood of
 * idle connections, then given them back.
 * Root cause: `process.memoryUsage()` reads the resident set from /proc, which takes a file
 * descriptor, so with none left it throws EMFILE; the timers that call it (the stats flush,
 * the idle collection, the overload monitor) threw out of the event loop and the process
 * exited with every connection on it. Accepting was already safe (libuv's reserve descriptor
 * closes what it cannot accept) and an upstream connect failing with EMFILE already a 503.
 */
import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import * as http from 'node:http';
import * as net from 'node:net';
import { after, before, test } from 'node:test';
import { hcmWithRoutes, httpBootstrap } from './helpers/bootstraps.js';
import { type ProxyProcess, startProxyProcess } from './helpers/proxy-process.js';

const LIMIT = 256;

let upstream: http.Server;
let upPort = 0;

before(async () => {
  // Each answer closes its connection: every proxied request needs a new upstream descriptor.
  upstream = http.createServer((_req, res) => {
    res.setHeader('connection', 'close');
    res.end('up');
  });
  await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
  upPort = (upstream.address() as net.AddressInfo).port;
});

after(() => upstream.close());

/** The proxy under `prlimit --nofile=LIMIT`, with `concurrency` threads. */
async function start(concurrency: number): Promise<ProxyProcess> {
  const bootstrap = httpBootstrap(
    [
      {
        name: 'up',
        connect_timeout: '1s',
        load_assignment: {
          cluster_name: 'up',
          endpoints: [
            {
              lb_endpoints: [
                { endpoint: { address: { socket_address: { address: '127.0.0.1', port_value: upPort } } } },
              ],
            },
          ],
        },
      },
    ],
    hcmWithRoutes([
      { match: { prefix: '/direct' }, direct_response: { status: 200, body: { inline_string: 'hi' } } },
      { match: { prefix: '/' }, route: { cluster: 'up' } },
    ]),
  );
  // The stats flush reads the process's memory every 100 ms: without a free descriptor each
  // flush failed (the idle collection's read, made once a busy second ends, ended the process).
  bootstrap.stats_flush_interval = '0.1s';
  return startProxyProcess(bootstrap, ['--concurrency', String(concurrency)], 60_000, {}, [
    'prlimit',
    `--nofile=${LIMIT}:${LIMIT}`,
    '--',
  ]);
}

/** A kept-alive client connection: `send` writes a GET and resolves to the status line of its answer ('' on a close). */
function client(port: number) {
  const socket = net.connect(port, '127.0.0.1');
  socket.on('error', () => {});
  let received = '';
  let waiter: (() => void) | null = null;
  socket.on('data', (d: Buffer) => {
    received += d.toString('latin1');
    waiter?.();
  });
  socket.on('close', () => waiter?.());
  return {
    socket,
    send(path: string): Promise<string> {
      received = '';
      socket.write(`GET ${path} HTTP/1.1\r\nHost: a\r\n\r\n`);
      return new Promise((resolve) => {
        const done = () => {
          const m = /^(HTTP\/1\.1 \d{3})[\s\S]*?\r\n\r\n/.exec(received);
          const length = Number(/\r\ncontent-length: (\d+)\r\n/i.exec(m?.[0] ?? '')?.[1] ?? 0);
          const complete = m && received.length >= m[0].length + length;
          if (complete || socket.destroyed) {
            clearTimeout(timer);
            waiter = null;
            resolve(m?.[1] ?? '');
          }
        };
        const timer = setTimeout(() => {
          waiter = null;
          resolve('timeout');
        }, 10_000);
        waiter = done;
        done();
      });
    },
  };
}

/** Floods the proxy past its descriptors, holds them 3 s, lets them go; asserts it served through. */
async function flood(proxy: ProxyProcess): Promise<void> {
  const port = await proxy.listenerPort('http');
  const openFiles = () => readdirSync(`/proc/${proxy.child.pid}/fd`).length;
  const held = client(port);
  assert.equal(await held.send('/direct'), 'HTTP/1.1 200');
  const idle: net.Socket[] = [];
  /** Connects idle clients until the proxy holds every descriptor it may open (or 15 s pass). */
  const exhaust = async (count: number) => {
    const deadline = Date.now() + 15_000;
    while (openFiles() < LIMIT && Date.now() < deadline) {
      for (let i = 0; i < count; i++) {
        const s = net.connect(port, '127.0.0.1');
        s.on('error', () => {});
        idle.push(s);
      }
      count = 4;
      await new Promise((r) => setTimeout(r, 100));
    }
    assert.equal(openFiles(), LIMIT);
  };
  await exhaust(2 * LIMIT);
  // Seconds of stats flushes and idle checks with no descriptor free (the flood made the
  // accepting thread busy: the idle second after it collects, and read the memory figures).
  await new Promise((r) => setTimeout(r, 2500));
  assert.equal(proxy.child.exitCode, null, proxy.stderr().slice(-2000));
  await exhaust(4);
  assert.equal(await held.send('/proxied'), 'HTTP/1.1 503');
  assert.equal(proxy.child.exitCode, null, proxy.stderr().slice(-2000));

  for (const s of idle) s.destroy();
  held.socket.destroy();
  const deadline = Date.now() + 15_000;
  while (openFiles() > LIMIT / 2 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
  const again = client(port);
  for (let i = 0; i < 10; i++) assert.equal(await again.send(i % 2 ? '/direct' : '/proxied'), 'HTTP/1.1 200');
  again.socket.destroy();
  assert.equal((await proxy.get('/ready')).status, 200);
  assert.equal(proxy.child.exitCode, null);
}

for (const concurrency of [1, 2])
  test(`out of descriptors (--concurrency ${concurrency}): the process stays up, a request needing an upstream connection is a 503, and serving resumes once they are back`, async () => {
    const proxy = await start(concurrency);
    try {
      await flood(proxy);
    } finally {
      await proxy.stop();
    }
  });
