import assert from 'node:assert/strict';
import * as net from 'node:net';
import { test } from 'node:test';
import type { RawCluster } from '../../../events/index.js';
import { clusterSettings } from '../../../reducers/settings/cluster.js';
import { Report } from '../../../src/bootstrap/report.js';
import { clusterTraffic } from '../../../src/dataplane/pool/cluster-traffic.js';
import { compileTcpProxy } from '../../../src/dataplane/tcp/config.js';
import { createTcpProxy } from '../../../src/dataplane/tcp/proxy.js';
import { StatsStore } from '../../../src/stats/store.js';
import type { ClusterBuild, UpstreamHost } from '../../../src/upstream/types.js';
import { tcpServer, until } from '../../helpers/dataplane.js';
import { hcmConfig, hostOf, startProxy } from '../../helpers/http-dataplane.js';

function host(port: number): UpstreamHost {
  return hostOf(`127.0.0.1:${port}`);
}

function runtime(stats: StatsStore, raw: RawCluster, hosts: UpstreamHost[]): ClusterBuild {
  const settings = clusterSettings(raw);
  return {
    name: raw.name,
    settings,
    hosts,
    lb: { choose: () => hosts[0] ?? null },
    scope: stats.scope(`cluster.${settings.statName}`),
    config: raw,
  };
}

const limits = (n: number) => ({
  circuit_breakers: {
    thresholds: [{ max_connections: n, max_pending_requests: n, max_requests: n, max_retries: n }],
  },
});

test('begin/end keep the cluster gauges, the host counters and the breakers in step, once per end', () => {
  const stats = new StatsStore();
  const h = host(1);
  const t = clusterTraffic(runtime(stats, { name: 'c', ...limits(1) }, [h]), undefined);
  const g = (n: string) => stats.gauge(`cluster.c.${n}`).value;
  const cx = t.beginConnection(h, 'http1');
  assert.deepEqual(
    [g('upstream_cx_active'), g('circuit_breakers.default.cx_open'), h.stats.cx_active],
    [1, 1, 1],
  );
  assert.equal(t.admitConnection(), false);
  assert.equal(stats.counter('cluster.c.upstream_cx_overflow').value, 1);
  const rq = t.beginRequest(h);
  assert.deepEqual(
    [g('upstream_rq_active'), g('circuit_breakers.default.rq_open'), h.stats.rq_active],
    [1, 1, 1],
  );
  assert.equal(t.admitRequest(), false);
  rq.end(503);
  rq.end(503);
  assert.deepEqual([g('upstream_rq_active'), g('circuit_breakers.default.rq_open')], [0, 0]);
  assert.deepEqual([h.stats.rq_active, h.stats.rq_error, h.stats.rq_total], [0, 1, 1]);
  assert.equal(stats.counter('cluster.c.upstream_rq_503').value, 1);
  const pending = t.beginPending(true);
  assert.equal(g('circuit_breakers.default.rq_pending_open'), 1);
  assert.equal(t.beginPending(true), null);
  pending?.end();
  assert.deepEqual([g('upstream_rq_pending_active'), g('circuit_breakers.default.rq_pending_open')], [0, 0]);
  const retry = t.beginRetry();
  assert.equal(t.beginRetry(), null);
  assert.equal(stats.counter('cluster.c.upstream_rq_retry_overflow').value, 1);
  retry?.end();
  assert.equal(g('circuit_breakers.default.rq_retry_open'), 0);
  // Never connected: the host counts a connect failure.
  cx.end();
  cx.end();
  assert.deepEqual([g('upstream_cx_active'), g('circuit_breakers.default.cx_open')], [0, 0]);
  assert.deepEqual([h.stats.cx_active, h.stats.cx_connect_fail, h.stats.cx_total], [0, 1, 1]);
  assert.equal(stats.gauges.get('cluster.c.circuit_breakers.default.cx_open')?.importMode, 'NeverImport');
});

test('a rebuilt runtime keeps its counts and brings its thresholds and connector', () => {
  const stats = new StatsStore();
  const h = host(1);
  const first = runtime(stats, { name: 'c', ...limits(1) }, [h]);
  const t = clusterTraffic(first, undefined);
  t.beginConnection(h, 'tcp');
  const rebuilt = runtime(stats, { name: 'c', ...limits(2), connect_timeout: '3s' }, [h]);
  assert.equal(clusterTraffic(rebuilt, t), t);
  assert.equal(t.connections, 1);
  assert.equal(t.connectionAllowed, true);
  assert.equal(t.connector.connectTimeoutMs, 3000);
  // A cluster sharing the stat name shares the stats, not the breakers or the connector.
  const twin = clusterTraffic(
    runtime(stats, { name: 'd', alt_stat_name: 'c', connect_timeout: '4s' }, [h]),
    undefined,
  );
  assert.notEqual(twin, t);
  assert.deepEqual(
    [twin.connections, twin.connector.connectTimeoutMs, t.connector.connectTimeoutMs],
    [0, 4000, 3000],
  );
  // Another stats store (another test, another worker) starts from zero.
  assert.notEqual(clusterTraffic(runtime(new StatsStore(), { name: 'c' }, [h]), t), t);
  // A rebuild under another stat name counts on the new stats from zero.
  const renamed = clusterTraffic(runtime(stats, { name: 'c', alt_stat_name: 'e' }, [h]), t);
  assert.notEqual(renamed, t);
  assert.equal(renamed.connections, 0);
});

test('HTTP and TCP count against one connection breaker', async () => {
  const upstream = await tcpServer((socket) => {
    socket.on('data', () => socket.write('HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok'));
  });
  const raw: RawCluster = { name: 'b', connect_timeout: '1s', ...limits(1) };
  const proxy = await startProxy(hcmConfig('b'), [{ raw, addresses: [`127.0.0.1:${upstream.port}`] }]);
  const tcp = createTcpProxy(
    compileTcpProxy({ stat_prefix: 'tp', cluster: 'b' }, 'tcp', new Report('test')),
    { ctx: proxy.ctx, clusters: { get: (name) => proxy.clusters.get(name) }, listenerName: 'l' },
  );
  const front = net.createServer((socket) => tcp.handle(socket));
  await new Promise<void>((resolve) => front.listen(0, '127.0.0.1', resolve));
  try {
    // The HTTP pool keeps its connection open after the response: the cluster's one connection.
    const res = await fetch(`http://127.0.0.1:${proxy.port}/`, { signal: AbortSignal.timeout(3000) });
    assert.equal(await res.text(), 'ok');
    assert.equal(proxy.gauge('cluster.b.circuit_breakers.default.cx_open'), 1);
    const client = net.connect((front.address() as net.AddressInfo).port, '127.0.0.1');
    client.on('error', () => {});
    await new Promise<void>((resolve) => client.once('close', () => resolve()));
    assert.equal(proxy.counter('cluster.b.upstream_cx_overflow'), 1);
    assert.equal(proxy.counter('cluster.b.upstream_cx_total'), 1);
    await proxy.close();
    await until(
      () => proxy.gauge('cluster.b.circuit_breakers.default.cx_open') === 0,
      2000,
      'breaker closed',
    );
  } finally {
    front.close();
    await tcp.close();
    await upstream.close();
  }
});
