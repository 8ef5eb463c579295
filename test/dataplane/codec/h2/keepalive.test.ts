/**
 * HTTP/2 `connection_keepalive` on a cluster (Envoy Gateway sets it on its xDS cluster), seen
 * frame by frame at an upstream written by hand, through the proxy process: PINGs every
 * interval on an idle connection that answers them, which stays up; no ACK within the timeout
 * closes the connection and counts `http2.keepalive_timeout`, and the next request opens a new
 * one; `connection_idle_interval` sends a PING ahead of a request on a connection silent that
 * long. Its compile step's refusals: test/config/h2-options.test.ts.
 */
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import type { JsonObject } from '../../../../events/index.js';
import { FLAG, FRAME } from '../../../helpers/h2-frames.js';
import type { ProxyProcess } from '../../../helpers/proxy-process.js';
import {
  answerOk,
  proxyToScripted,
  type ScriptedConnection,
  type ScriptedH2Upstream,
  scriptedH2Upstream,
} from '../../../helpers/scripted-h2-upstream.js';
import { statValue, until } from '../../../helpers/xds-fixtures.js';

const pings = (c: ScriptedConnection | undefined) =>
  (c?.frames() ?? []).filter((f) => f.type === FRAME.PING && (f.flags & FLAG.ACK) === 0);

describe('HTTP/2 connection_keepalive on an upstream cluster', { timeout: 120_000 }, () => {
  const running: Array<{ proxy: ProxyProcess; upstream: ScriptedH2Upstream }> = [];
  const start = async (keepalive: JsonObject, ackPings: boolean) => {
    const upstream = await scriptedH2Upstream(answerOk, [], ackPings);
    const proxy = await proxyToScripted(upstream, 1, { connection_keepalive: keepalive });
    running.push({ proxy, upstream });
    return { proxy, upstream, port: await proxy.listenerPort('http') };
  };
  after(async () => {
    for (const { proxy, upstream } of running) {
      await proxy.stop();
      upstream.close();
    }
  });

  it('PINGs an idle connection every interval; one that answers stays up', async () => {
    const { proxy, upstream, port } = await start({ interval: '0.2s', timeout: '5s' }, true);
    assert.equal((await fetch(`http://127.0.0.1:${port}/`)).status, 200);
    await until('four PINGs', async () => pings(upstream.connections[0]).length >= 4, 20_000);
    assert.equal(upstream.connections.length, 1);
    assert.equal(upstream.connections[0]?.socket.destroyed, false);
    // Each PING carries its own payload, so a late ACK of an earlier one answers nothing.
    const payloads = pings(upstream.connections[0]).map((f) => f.payload.toString('hex'));
    assert.equal(new Set(payloads).size, payloads.length);
    assert.equal((await statValue(proxy, 'cluster.h2.http2.keepalive_timeout')) ?? 0, 0);
  });

  it('closes a connection whose PING gets no ACK within the timeout, and counts it', async () => {
    const { proxy, upstream, port } = await start({ interval: '0.2s', timeout: '0.3s' }, false);
    assert.equal((await fetch(`http://127.0.0.1:${port}/`)).status, 200);
    await until(
      'http2.keepalive_timeout',
      async () => ((await statValue(proxy, 'cluster.h2.http2.keepalive_timeout')) ?? 0) >= 1,
      20_000,
    );
    await until('the connection closed', async () => upstream.connections[0]?.socket.destroyed === true);
    // One PING at a time: none is sent while one waits for its ACK.
    assert.equal(pings(upstream.connections[0]).length, 1);
    assert.equal((await fetch(`http://127.0.0.1:${port}/`)).status, 200);
    assert.equal(upstream.connections.length, 2);
  });

  it('connection_idle_interval: a PING goes ahead of a request on a connection silent that long', async () => {
    const { upstream, port } = await start({ timeout: '5s', connection_idle_interval: '0.3s' }, true);
    assert.equal((await fetch(`http://127.0.0.1:${port}/`)).status, 200);
    assert.equal(pings(upstream.connections[0]).length, 0);
    await new Promise((r) => setTimeout(r, 600));
    assert.equal((await fetch(`http://127.0.0.1:${port}/`)).status, 200);
    const frames = upstream.connections[0]?.frames() ?? [];
    const ping = frames.findIndex((f) => f.type === FRAME.PING);
    const secondRequest = frames.findLastIndex((f) => f.type === FRAME.HEADERS);
    assert.ok(ping >= 0 && ping < secondRequest, 'the PING precedes the second request');
    assert.equal(pings(upstream.connections[0]).length, 1);
  });
});
