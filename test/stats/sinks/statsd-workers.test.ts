/**
 * The statsd sink of a real proxy process, pasted as the reference's docs write it, sending
 * to a UDP peer of the test. With `--concurrency 2` the requests are counted in the workers
 * and the sink runs in the primary: the deltas of every flush must add up to each request
 * exactly once, and every upstream request must come as one timer sample. With
 * `stats_flush_on_admin` nothing goes until the admin's `/stats` is read.
 */
import assert from 'node:assert/strict';
import { createSocket } from 'node:dgram';
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import { test } from 'node:test';
import { hcmWithRoutes, httpBootstrap } from '../../helpers/bootstraps.js';
import { cluster } from '../../helpers/dataplane.js';
import { send } from '../../helpers/http-send.js';
import { startProxyProcess } from '../../helpers/proxy-process.js';

const REQUESTS = 24;

async function until(check: () => boolean, what: () => string, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting: ${what()}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

/** Every statsd line a UDP peer gets, and sums by name and type. */
async function statsdPeer() {
  const socket = createSocket('udp4');
  const lines: string[] = [];
  socket.on('message', (m) => lines.push(...m.toString().split('\n')));
  await new Promise<void>((r) => socket.bind(0, '127.0.0.1', r));
  return {
    port: socket.address().port,
    lines,
    /** The sum of the values of `name`'s lines of `type` (`c`), or their number (`ms`). */
    total(name: string, type: 'c' | 'ms'): number {
      let sum = 0;
      for (const line of lines) {
        const m = /^([^:]+):([\d.]+)\|(\w+)$/.exec(line);
        assert.ok(m, `a statsd line: ${JSON.stringify(line)}`);
        if (m[1] !== name || m[3] !== type) continue;
        sum += type === 'c' ? Number(m[2]) : 1;
      }
      return sum;
    },
    close: () => socket.close(),
  };
}

async function countsOnce(concurrency: number, flushOnAdmin: boolean): Promise<void> {
  const web = http.createServer((_req, res) => res.end('ok'));
  await new Promise<void>((r) => web.listen(0, '127.0.0.1', r));
  const peer = await statsdPeer();
  const bootstrap = httpBootstrap(
    [cluster('web', [(web.address() as AddressInfo).port])],
    hcmWithRoutes([{ match: { prefix: '/' }, route: { cluster: 'web' } }]),
  );
  const proxy = await startProxyProcess(
    {
      ...bootstrap,
      ...(flushOnAdmin ? { stats_flush_on_admin: true } : { stats_flush_interval: '0.3s' }),
      // As the reference's docs write it (v3), the name in its short form.
      stats_sinks: [
        {
          name: 'envoy.statsd',
          typed_config: {
            '@type': 'type.googleapis.com/envoy.config.metrics.v3.StatsdSink',
            address: { socket_address: { address: '127.0.0.1', port_value: peer.port } },
            prefix: 'edge',
          },
        },
      ],
    },
    ['--concurrency', String(concurrency)],
  );
  try {
    const port = await proxy.listenerPort('http');
    const statuses = await Promise.all(
      Array.from({ length: REQUESTS }, () => send(port, 'GET', '/').then((a) => a.status)),
    );
    assert.deepEqual(new Set(statuses), new Set([200]));
    const requests = () => peer.total('edge.http.ingress_http.downstream_rq_total', 'c');
    const samples = () => peer.total('edge.cluster.web.upstream_rq_time', 'ms');
    if (flushOnAdmin) {
      await new Promise((r) => setTimeout(r, 700));
      assert.equal(peer.lines.length, 0, 'no flush before the admin asks');
      await until(
        () => {
          void proxy.get('/stats?filter=^server.live$');
          return requests() === REQUESTS;
        },
        () => `${requests()} requests counted`,
      );
    }
    await until(
      () => {
        // Flushed on admin reads only: a worker's timer samples may reach the primary after
        // the read that flushed the last request (14 of 24 did at load 40 in CI).
        if (flushOnAdmin) void proxy.get('/stats?filter=^server.live$');
        return requests() >= REQUESTS && samples() >= REQUESTS;
      },
      () => `${requests()} requests, ${samples()} timer samples:\n${peer.lines.slice(0, 40).join('\n')}`,
    );
    // a few more flushes: nothing counted twice
    await new Promise((r) => setTimeout(r, 1000));
    if (flushOnAdmin) await proxy.get('/stats?filter=^server.live$');
    assert.equal(requests(), REQUESTS);
    assert.equal(samples(), REQUESTS);
    assert.equal(peer.total('edge.cluster.web.upstream_rq_200', 'c'), REQUESTS);
    assert.ok(
      peer.lines.some((l) => /^edge\.server\.live:1\|g$/.test(l)),
      'the gauge server.live',
    );
  } finally {
    await proxy.stop();
    peer.close();
    web.closeAllConnections();
    web.close();
  }
}

test('statsd sink with --concurrency 2: every worker request counted exactly once', async () => {
  await countsOnce(2, false);
});

test('statsd sink with --concurrency 1', async () => {
  await countsOnce(1, false);
});

test('statsd sink with stats_flush_on_admin: a flush at each /stats, none before', async () => {
  await countsOnce(2, true);
});
