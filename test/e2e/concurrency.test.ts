import assert from 'node:assert/strict';
import { test } from 'node:test';
import { cleanupsAfterAll } from '../helpers/cleanups.js';
import {
  exchange,
  SETTLE_MS,
  settle,
  settleMatch,
  tcpEchoBootstrap,
  tcpServer,
} from '../helpers/dataplane.js';
import { startProxyProcess } from '../helpers/proxy-process.js';

const cleanups = cleanupsAfterAll();

test('--concurrency 2 serves a TCP listener from two workers with the real port in /listeners', async () => {
  const upstream = await tcpServer((socket) => {
    const chunks: Buffer[] = [];
    socket.on('data', (c: Buffer) => chunks.push(c));
    socket.on('end', () => socket.end(Buffer.concat(chunks)));
  });
  cleanups.push(upstream.close);
  const proxy = await startProxyProcess(tcpEchoBootstrap(upstream.port), ['--concurrency', '2']);
  cleanups.push(proxy.stop);
  const port = await proxy.listenerPort('tcp');
  assert.notEqual(port, 0, 'the admin shows the real port');
  const answers = await Promise.all(Array.from({ length: 12 }, (_, i) => exchange(port, `m${i}`)));
  assert.deepEqual(
    answers.map((a) => a.data.toString()),
    Array.from({ length: 12 }, (_, i) => `m${i}`),
  );
  // The admin lives in the primary; the figures come from both workers, summed.
  const summed = 'tcp.echo.downstream_cx_total: 12';
  const stats = async () => (await proxy.get('/stats?filter=^tcp\\.echo\\.downstream_cx_total$')).body.trim();
  assert.equal(await settle(stats, summed, SETTLE_MS), summed);
  // Control-plane counts are counted once, not once per process.
  const added = await proxy.get('/stats?filter=^cluster_manager\\.cluster_added$');
  assert.equal(added.body.trim(), 'cluster_manager.cluster_added: 1');
  const hostTotal = new RegExp(`^echo::127\\.0\\.0\\.1:${upstream.port}::cx_total::12$`, 'm');
  const clusters = async () => (await proxy.get('/clusters')).body;
  assert.match(await settleMatch(clusters, hostTotal, SETTLE_MS), hostTotal);
});
