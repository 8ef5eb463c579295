import assert from 'node:assert/strict';
import * as net from 'node:net';
import { test } from 'node:test';
import { drainStarted } from '../../../events/index.js';
import { ListenerManager } from '../../../src/dataplane/listeners/manager.js';
import { cleanupsAfterAll } from '../../helpers/cleanups.js';
import {
  boundPort,
  cluster,
  exchange,
  staticClusters,
  tcpListener,
  tcpServer,
  testContext,
  until,
} from '../../helpers/dataplane.js';

const cleanups = cleanupsAfterAll();

async function echo() {
  const upstream = await tcpServer((socket) => {
    socket.on('data', (c: Buffer) => socket.write(c));
    socket.on('end', () => socket.end());
  });
  cleanups.push(upstream.close);
  return upstream;
}

async function start(ports: number) {
  const ctx = testContext({
    static_resources: {
      clusters: [cluster('echo', [ports])],
      listeners: [
        tcpListener('in', { stat_prefix: 'in', cluster: 'echo' }, { traffic_direction: 'INBOUND' }),
        tcpListener('out', { stat_prefix: 'out', cluster: 'echo' }, { traffic_direction: 'OUTBOUND' }),
      ],
    },
  });
  const manager = new ListenerManager(ctx, staticClusters(ctx));
  await manager.start();
  cleanups.push(async () => {
    await manager.close();
    await ctx.close();
  });
  return { ctx, inPort: await boundPort(ctx, 'in'), outPort: await boundPort(ctx, 'out') };
}

test('an inbound-only drain stops inbound listeners and leaves outbound ones serving', async () => {
  const upstream = await echo();
  const { ctx, inPort, outPort } = await start(upstream.port);
  ctx.store.dispatch(
    drainStarted({ inboundOnly: true, graceful: false, strategy: 'immediate', drainTimeMs: 0 }),
    'test',
  );
  await until(() => ctx.store.state.listeners.in?.state === 'stopped', 2000, 'inbound stopped');
  assert.match(String((await exchange(inPort, 'x')).error), /ECONNREFUSED/);
  assert.equal((await exchange(outPort, 'still')).data.toString(), 'still');
  assert.equal(ctx.store.state.listeners.out?.state, 'active');
  ctx.store.dispatch(
    drainStarted({ inboundOnly: false, graceful: false, strategy: 'immediate', drainTimeMs: 0 }),
    'test',
  );
  await until(() => ctx.store.state.listeners.out?.state === 'stopped', 2000, 'outbound stopped');
  assert.match(String((await exchange(outPort, 'x')).error), /ECONNREFUSED/);
});

test('a graceful drain keeps serving in-flight connections, then closes listeners at the drain time', async () => {
  const upstream = await echo();
  const { ctx, inPort } = await start(upstream.port);
  const inflight = net.connect(inPort, '127.0.0.1');
  inflight.on('error', () => {});
  const got: Buffer[] = [];
  inflight.on('data', (c: Buffer) => got.push(c));
  const closed = new Promise<number>((resolve) => inflight.on('close', () => resolve(Date.now())));
  await until(() => upstream.sockets.size === 1, 2000, 'in-flight connection');
  const drainAt = Date.now();
  ctx.store.dispatch(
    drainStarted({ inboundOnly: false, graceful: true, strategy: 'immediate', drainTimeMs: 600 }),
    'test',
  );
  inflight.write('during-drain');
  await until(() => Buffer.concat(got).toString() === 'during-drain', 2000, 'echo during drain');
  // Still accepting during the drain period.
  assert.equal((await exchange(inPort, 'new')).data.toString(), 'new');
  assert.equal(ctx.store.state.listeners.in?.state, 'draining');
  await until(() => ctx.store.state.listeners.in?.state === 'stopped', 3000, 'stopped after drain time');
  assert.ok(Date.now() - drainAt >= 550, 'listeners stop at the end of the drain time');
  assert.ok((await closed) - drainAt >= 550, 'the in-flight TCP connection is closed at the drain time');
  assert.match(String((await exchange(inPort, 'late')).error), /ECONNREFUSED/);
});
