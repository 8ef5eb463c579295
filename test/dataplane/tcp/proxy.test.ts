import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import * as net from 'node:net';
import { test } from 'node:test';
import { activeHealthChanged, type JsonObject } from '../../../events/index.js';
import { ListenerManager } from '../../../src/dataplane/listeners/manager.js';
import { cleanupsAfterAll } from '../../helpers/cleanups.js';
import {
  boundPort,
  closedPort,
  cluster,
  exchange,
  staticClusters,
  tcpListener,
  tcpServer,
  testContext,
  until,
} from '../../helpers/dataplane.js';

const cleanups = cleanupsAfterAll();

/** Starts a data plane over `bootstrap`; returns its context and the port of listener `l`. */
async function proxy(bootstrap: JsonObject) {
  const ctx = testContext(bootstrap);
  const manager = new ListenerManager(ctx, staticClusters(ctx));
  await manager.start();
  cleanups.push(async () => {
    await manager.close();
    await ctx.close();
  });
  return { ctx, port: await boundPort(ctx, 'l'), counter: (n: string) => ctx.stats.counter(n).value };
}

/** Answers once the client half-closes: `echo:` and everything it sent, then FIN. */
async function echoUpstream() {
  const upstream = await tcpServer((socket) => {
    const chunks: Buffer[] = [];
    socket.on('data', (c: Buffer) => chunks.push(c));
    socket.on('end', () => socket.end(Buffer.concat([Buffer.from('echo:'), ...chunks])));
  });
  cleanups.push(upstream.close);
  return upstream;
}

test('relays bytes both ways and passes a half-close on in each direction', async () => {
  const upstream = await echoUpstream();
  const { ctx, port, counter } = await proxy({
    static_resources: {
      clusters: [cluster('backend', [upstream.port])],
      listeners: [tcpListener('l', { stat_prefix: 'tp', cluster: 'backend' })],
    },
  });
  const { data, error } = await exchange(port, 'hello');
  assert.equal(error, null);
  // The upstream answers only after it saw the client's FIN, so the answer proves the half-close.
  assert.equal(data.toString(), 'echo:hello');
  await until(() => counter('tcp.tp.downstream_cx_tx_bytes_total') === 10, 2000, 'tx bytes');
  assert.equal(counter('tcp.tp.downstream_cx_total'), 1);
  assert.equal(counter('tcp.tp.downstream_cx_rx_bytes_total'), 5);
  assert.equal(counter('cluster.backend.upstream_cx_total'), 1);
  assert.equal(counter('cluster.backend.upstream_cx_rx_bytes_total'), 10);
  assert.equal(counter('listener.127.0.0.1_0.downstream_cx_total'), 1);
  assert.equal(ctx.store.state.listeners.l?.state, 'active');
  await until(
    () => ctx.stats.gauge('cluster.backend.upstream_cx_active').value === 0,
    2000,
    'upstream closed',
  );
  await until(() => ctx.stats.gauge('server.total_connections').value === 0, 2000, 'downstream closed');
});

test('a refused upstream connection closes the downstream and counts a connect failure', async () => {
  const dead = await closedPort();
  const { port, counter } = await proxy({
    static_resources: {
      clusters: [cluster('gone', [dead])],
      listeners: [tcpListener('l', { stat_prefix: 'tp', cluster: 'gone' })],
    },
  });
  const { data } = await exchange(port, 'anyone?');
  assert.equal(data.length, 0);
  await until(() => counter('cluster.gone.upstream_cx_connect_fail') === 1, 2000, 'connect fail');
});

test('max_connect_attempts retries on another host before giving up', async () => {
  const upstream = await echoUpstream();
  const dead = await closedPort();
  const { port, counter } = await proxy({
    static_resources: {
      clusters: [cluster('mixed', [dead, upstream.port])],
      listeners: [tcpListener('l', { stat_prefix: 'tp', cluster: 'mixed', max_connect_attempts: 2 })],
    },
  });
  const { data } = await exchange(port, 'x');
  assert.equal(data.toString(), 'echo:x');
  assert.equal(counter('cluster.mixed.upstream_cx_connect_fail'), 1);
});

/**
 * A port whose listen queue is full and never accepted (python, as node:net accepts at once):
 * a connect to it stays pending until its timeout.
 */
async function unansweredPort(): Promise<number> {
  const py = spawn('python3', [
    '-c',
    [
      'import socket, time',
      's = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(0)',
      'held = [socket.socket() for _ in range(3)]',
      'for c in held: c.setblocking(False); c.connect_ex(s.getsockname())',
      'print(s.getsockname()[1], flush=True)',
      'time.sleep(120)',
    ].join('\n'),
  ]);
  cleanups.push(() => {
    py.kill();
  });
  return new Promise((resolve, reject) => {
    py.once('error', reject);
    py.stdout.once('data', (d: Buffer) => resolve(Number(String(d).trim())));
  });
}

/*
 * Root cause: when a client reset its connection while the upstream connect was pending, the
 * attempt was destroyed and then counted as the upstream's connect failure (and logged UF):
 * a port scan showed as an upstream going bad. It is the client's doing (DC), and a local close.
 */
test('a client that resets while its upstream connects: nothing held, no upstream connect failure counted', async () => {
  const port0 = await unansweredPort();
  const { port, counter, ctx } = await proxy({
    static_resources: {
      clusters: [cluster('slow', [port0], { connect_timeout: '30s' })],
      listeners: [tcpListener('l', { stat_prefix: 'tp', cluster: 'slow' })],
    },
  });
  for (let i = 0; i < 10; i++) {
    const socket = net.connect(port, '127.0.0.1');
    socket.on('error', () => {});
    await new Promise((resolve) => socket.once('connect', resolve));
    socket.write('hello');
    await until(() => counter('cluster.slow.upstream_cx_total') === i + 1, 2000, 'the connect started');
    socket.resetAndDestroy();
  }
  await until(() => ctx.stats.gauge('cluster.slow.upstream_cx_active').value === 0, 5000, 'attempts dropped');
  await until(() => ctx.stats.gauge('server.total_connections').value === 0, 5000, 'downstreams closed');
  assert.equal(counter('cluster.slow.upstream_cx_connect_fail'), 0);
  assert.equal(counter('cluster.slow.upstream_cx_destroy_local'), 10);
});

test('idle_timeout closes a connection with no traffic either way', async () => {
  const upstream = await tcpServer(() => {});
  cleanups.push(upstream.close);
  const { port, counter } = await proxy({
    static_resources: {
      clusters: [cluster('quiet', [upstream.port])],
      listeners: [tcpListener('l', { stat_prefix: 'tp', cluster: 'quiet', idle_timeout: '0.200s' })],
    },
  });
  const started = Date.now();
  const closed = await new Promise<number>((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    socket.on('error', () => {});
    socket.on('close', () => resolve(Date.now() - started));
  });
  assert.ok(closed >= 150 && closed < 3000, `closed after ${closed} ms`);
  assert.equal(counter('tcp.tp.idle_timeout'), 1);
});

test('megabytes through a small buffer limit arrive intact (backpressure)', async () => {
  const size = 4 * 1024 * 1024;
  const upstream = await tcpServer((socket) => {
    let seen = 0;
    socket.on('data', (c: Buffer) => {
      seen += c.length;
    });
    socket.on('end', () => socket.end(`${seen}`));
  });
  cleanups.push(upstream.close);
  const { port, counter } = await proxy({
    static_resources: {
      clusters: [cluster('bulk', [upstream.port], { per_connection_buffer_limit_bytes: 16384 })],
      listeners: [
        tcpListener(
          'l',
          { stat_prefix: 'tp', cluster: 'bulk' },
          { per_connection_buffer_limit_bytes: 16384 },
        ),
      ],
    },
  });
  const { data } = await exchange(port, Buffer.alloc(size, 7));
  assert.equal(data.toString(), `${size}`);
  assert.equal(counter('tcp.tp.downstream_cx_rx_bytes_total'), size);
});

test('max_connections overflows: the extra connection is closed and counted', async () => {
  const upstream = await tcpServer(() => {});
  cleanups.push(upstream.close);
  const { port, counter } = await proxy({
    static_resources: {
      clusters: [
        cluster('small', [upstream.port], { circuit_breakers: { thresholds: [{ max_connections: 1 }] } }),
      ],
      listeners: [tcpListener('l', { stat_prefix: 'tp', cluster: 'small' })],
    },
  });
  const first = net.connect(port, '127.0.0.1');
  first.on('error', () => {});
  cleanups.push(async () => void first.destroy());
  await until(() => upstream.sockets.size === 1, 2000, 'first upstream connection');
  const { data } = await exchange(port, 'second');
  assert.equal(data.length, 0);
  assert.equal(counter('cluster.small.upstream_cx_overflow'), 1);
});

test('close_connections_on_host_health_failure drops connections to a host that fails a check', async () => {
  const upstream = await tcpServer(() => {}, { allowHalfOpen: false });
  cleanups.push(upstream.close);
  const { ctx, port } = await proxy({
    static_resources: {
      clusters: [cluster('hc', [upstream.port], { close_connections_on_host_health_failure: true })],
      listeners: [tcpListener('l', { stat_prefix: 'tp', cluster: 'hc' })],
    },
  });
  const socket = net.connect(port, '127.0.0.1');
  socket.on('error', () => {});
  const closed = new Promise<void>((resolve) => socket.on('close', () => resolve()));
  await until(() => upstream.sockets.size === 1, 2000, 'upstream connection');
  ctx.store.dispatch(
    activeHealthChanged({ cluster: 'hc', address: `127.0.0.1:${upstream.port}`, healthy: false }),
    'test',
  );
  await closed;
  await until(() => upstream.sockets.size === 0, 2000, 'upstream side closed');
});

test('weighted_clusters spreads connections by weight and unknown clusters count no_route', async () => {
  const a = await echoUpstream();
  const { port, counter } = await proxy({
    static_resources: {
      clusters: [cluster('a', [a.port])],
      listeners: [
        tcpListener('l', {
          stat_prefix: 'tp',
          weighted_clusters: {
            clusters: [
              { name: 'a', weight: 1 },
              { name: 'missing', weight: 1 },
            ],
          },
        }),
      ],
    },
  });
  const results = await Promise.all(Array.from({ length: 20 }, () => exchange(port, 'w')));
  const served = results.filter((r) => r.data.toString() === 'echo:w').length;
  assert.ok(served > 0 && served < 20, `served ${served} of 20`);
  assert.equal(counter('tcp.tp.downstream_cx_no_route'), 20 - served);
});
