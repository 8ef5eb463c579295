import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import * as http from 'node:http';
import * as http2 from 'node:http2';
import * as net from 'node:net';
import { test } from 'node:test';
import type { JsonObject, RawCluster } from '../../../events/index.js';
import { ListenerManager } from '../../../src/dataplane/listeners/manager.js';
import { cleanupsAfterAll } from '../../helpers/cleanups.js';
import {
  boundPort,
  cluster,
  staticClusters,
  tcpListener,
  tcpServer,
  testContext,
  until,
} from '../../helpers/dataplane.js';
import { hcmConfig, startProxy } from '../../helpers/http-dataplane.js';

/**
 * The HTTP/1 pool, the HTTP/2 pool and the TCP proxy open their upstream connections through
 * one connector: each binds `upstream_bind_config` (address and port) and sets
 * `tcp_keepalive`, observed on the upstream's accepted socket and in the kernel's socket table.
 */

const cleanups = cleanupsAfterAll();

/** A second loopback address, so the bind is visible (connections default to 127.0.0.1). */
const SOURCE = '127.0.0.2';

/** A port free on SOURCE: bound, read back, released. */
async function freeSourcePort(): Promise<number> {
  const s = net.createServer();
  await new Promise<void>((resolve) => s.listen(0, SOURCE, resolve));
  const port = (s.address() as net.AddressInfo).port;
  await new Promise<void>((resolve) => s.close(() => resolve()));
  return port;
}

function socketOptions(port: number): JsonObject {
  return {
    upstream_bind_config: { source_address: { address: SOURCE, port_value: port } },
    upstream_connection_options: { tcp_keepalive: { keepalive_time: 37 } },
  };
}

/** The kernel's timer of the established connection from SOURCE:port ("keepalive" when SO_KEEPALIVE is on). */
function timerOf(port: number): string {
  return execFileSync('ss', ['-tnoH', 'state', 'established', 'src', `${SOURCE}:${port}`], {
    encoding: 'utf8',
  });
}

interface Peer {
  address: string;
  port: number;
}

/** One GET through an HTTP proxy whose cluster `raw` holds `upstream`, answered `ok`. */
async function getOkThrough(raw: RawCluster, upstream: net.AddressInfo): Promise<void> {
  const proxy = await startProxy(hcmConfig('b'), [{ raw, addresses: [`127.0.0.1:${upstream.port}`] }]);
  cleanups.push(() => proxy.close());
  const res = await fetch(`http://127.0.0.1:${proxy.port}/`, { signal: AbortSignal.timeout(3000) });
  assert.equal(await res.text(), 'ok');
}

function assertBoundWithKeepAlive(peer: Peer | null, port: number): void {
  assert.deepEqual(peer, { address: SOURCE, port });
  assert.match(timerOf(port), /timer:\(keepalive,/);
}

test('HTTP/1 pool: bound source address and port, keep-alive on', async () => {
  let peer: Peer | null = null;
  const upstream = http.createServer((req, res) => {
    peer = { address: req.socket.remoteAddress ?? '', port: req.socket.remotePort ?? 0 };
    res.end('ok');
  });
  await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
  cleanups.push(() => {
    upstream.closeAllConnections();
    upstream.close();
  });
  const port = await freeSourcePort();
  const raw: RawCluster = { name: 'b', connect_timeout: '1s', ...socketOptions(port) };
  await getOkThrough(raw, upstream.address() as net.AddressInfo);
  // The pooled connection stays open after the response: the kernel still holds it.
  assertBoundWithKeepAlive(peer, port);
});

test('HTTP/2 pool: bound source address and port, keep-alive on', async () => {
  let peer: Peer | null = null;
  const upstream = http2.createServer();
  upstream.on('stream', (stream) => {
    const socket = stream.session?.socket;
    peer = { address: socket?.remoteAddress ?? '', port: socket?.remotePort ?? 0 };
    stream.respond({ ':status': 200 });
    stream.end('ok');
  });
  const sessions = new Set<http2.ServerHttp2Session>();
  upstream.on('session', (s) => sessions.add(s));
  await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
  cleanups.push(() => {
    for (const s of sessions) s.destroy();
    upstream.close();
  });
  const port = await freeSourcePort();
  const raw: RawCluster = {
    name: 'b',
    connect_timeout: '1s',
    http2_protocol_options: {},
    ...socketOptions(port),
  };
  await getOkThrough(raw, upstream.address() as net.AddressInfo);
  assertBoundWithKeepAlive(peer, port);
});

test('TCP proxy: bound source address and port, keep-alive on', async () => {
  let peer: Peer | null = null;
  const upstream = await tcpServer((socket) => {
    peer = { address: socket.remoteAddress ?? '', port: socket.remotePort ?? 0 };
    socket.write('hi');
  });
  cleanups.push(upstream.close);
  const port = await freeSourcePort();
  const ctx = testContext({
    static_resources: {
      clusters: [cluster('backend', [upstream.port], socketOptions(port))],
      listeners: [tcpListener('l', { stat_prefix: 'tp', cluster: 'backend' })],
    },
  });
  const manager = new ListenerManager(ctx, staticClusters(ctx));
  await manager.start();
  cleanups.push(async () => {
    await manager.close();
    await ctx.close();
  });
  const client = net.connect(await boundPort(ctx, 'l'), '127.0.0.1');
  cleanups.push(() => {
    client.destroy();
  });
  client.on('error', () => {});
  const greeting = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('no bytes relayed within 3 s')), 3000);
    client.once('data', (d: Buffer) => {
      clearTimeout(timer);
      resolve(d.toString());
    });
  });
  assert.equal(greeting, 'hi');
  await until(() => peer !== null, 2000, 'upstream accepted');
  assertBoundWithKeepAlive(peer, port);
});
