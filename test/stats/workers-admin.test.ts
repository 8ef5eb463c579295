/**
 * `/stats?usedonly` and `/stats/recentlookups` with `--concurrency 2`: the data plane runs in
 * two workers, the admin in the primary, so what the workers did must reach the admin.
 */
import assert from 'node:assert/strict';
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, test } from 'node:test';
import type { JsonObject } from '../../events/index.js';
import { hcmWithRoutes, httpBootstrap } from '../helpers/bootstraps.js';
import {
  cluster,
  exchange,
  SETTLE_MS,
  settle,
  settleMatch,
  tcpListener,
  tcpServer,
} from '../helpers/dataplane.js';
import { type ProxyProcess, startProxyProcess } from '../helpers/proxy-process.js';

let proxy: ProxyProcess;
let port = 0;
let httpPort = 0;
/** Connections made so far: the workers' counters add up to this. */
let sent = 0;
const cleanups: Array<() => Promise<void>> = [];

before(async () => {
  const upstream = await tcpServer((socket) => {
    socket.on('data', (d: Buffer) => socket.write(d));
    socket.on('end', () => socket.end());
  });
  cleanups.push(upstream.close);
  // Answers with the status its path names: a status first seen is a stat looked up by name.
  const web = http.createServer((req, res) => {
    res.statusCode = Number(req.url?.slice(1)) || 200;
    res.end('ok');
  });
  await new Promise<void>((r) => web.listen(0, '127.0.0.1', r));
  cleanups.push(async () => {
    web.closeAllConnections();
    web.close();
  });
  const httpListener = (
    httpBootstrap([], hcmWithRoutes([{ match: { prefix: '/' }, route: { cluster: 'web' } }])) as {
      static_resources: { listeners: JsonObject[] };
    }
  ).static_resources.listeners[0] as JsonObject;
  proxy = await startProxyProcess(
    {
      admin: { address: { socket_address: { address: '127.0.0.1', port_value: 0 } } },
      static_resources: {
        clusters: [cluster('echo', [upstream.port]), cluster('web', [(web.address() as AddressInfo).port])],
        listeners: [tcpListener('tcp', { stat_prefix: 'echo', cluster: 'echo' }), httpListener],
      },
    },
    ['--concurrency', '2'],
  );
  cleanups.push(proxy.stop);
  port = await proxy.listenerPort('tcp');
  httpPort = await proxy.listenerPort('http');
});

after(async () => {
  for (const c of cleanups.reverse()) await c();
});

/** Sequential exchanges: each is a new connection, which the kernel gives to either worker. */
async function traffic(n: number): Promise<void> {
  for (let i = 0; i < n; i++) {
    assert.equal((await exchange(port, `m${i}`)).data.toString(), `m${i}`);
    sent += 1;
  }
}

/** `[name, value]` of the counters in a Prometheus body (`# TYPE x counter` then samples). */
function promCounters(body: string): Array<[string, number]> {
  const out: Array<[string, number]> = [];
  let counter = false;
  for (const line of body.split('\n')) {
    if (line.startsWith('# TYPE ')) counter = line.endsWith(' counter');
    else if (counter && line) out.push([line.slice(0, line.indexOf('{')), Number(line.split(' ').pop())]);
  }
  return out;
}

test('usedonly before traffic: no zero counter in text, JSON or Prometheus, though they exist', async () => {
  const all = (await proxy.get('/stats')).body;
  assert.match(all, /^cluster_manager\.cluster_updated_via_merge: 0$/m);
  assert.match(all, /^tcp\.echo\.downstream_cx_total: 0$/m);
  const text = (await proxy.get('/stats?usedonly')).body;
  assert.doesNotMatch(text, /cluster_updated_via_merge|static_unknown_fields|tcp\.echo\.downstream_cx_total/);
  assert.match(text, /^cluster_manager\.cluster_added: 2$/m, 'a counter counted at start-up is used');
  const json = JSON.parse((await proxy.get('/stats?usedonly&format=json')).body) as {
    stats: Array<{ name?: string; value?: number }>;
  };
  const jsonNames = json.stats.flatMap((s) => (s.name ? [s.name] : []));
  assert.ok(jsonNames.includes('cluster_manager.cluster_added'));
  assert.ok(!jsonNames.includes('cluster_manager.cluster_updated_via_merge'));
  for (const path of ['/stats?usedonly&format=prometheus', '/stats/prometheus?usedonly']) {
    const counters = promCounters((await proxy.get(path)).body);
    assert.ok(counters.length > 0, path);
    assert.deepEqual(
      counters.filter(([, v]) => v === 0),
      [],
      `${path}: a counter nothing counted is not used`,
    );
  }
});

test('recent lookups: names the workers look up after enabling are listed, and the switches reach them', async () => {
  const off = (await proxy.get('/stats/recentlookups')).body;
  assert.match(off, /^Lookup tracking is not enabled/);
  assert.equal((await proxy.post('/stats/recentlookups/enable')).status, 200);
  // A worker looks a response code's counter up by name the first time it sees that code.
  for (const status of [201, 202, 203, 204]) {
    assert.equal((await fetch(`http://127.0.0.1:${httpPort}/${status}`)).status, status);
  }
  const listed = /^ +1 cluster\.web\.upstream_rq_201$/m;
  const on = await settleMatch(async () => (await proxy.get('/stats/recentlookups')).body, listed, SETTLE_MS);
  assert.match(on, /^ {3}Count Lookup$/m);
  assert.match(on, listed, on);
  const total = Number(/^total: (\d+)$/m.exec(on)?.[1]);
  assert.ok(total > 0);
  const gauge = (await proxy.get('/stats?filter=^server\\.stats_recent_lookups$')).body;
  assert.ok(Number(gauge.split(': ')[1]) >= total, `the gauge counts the workers' lookups too: ${gauge}`);

  assert.equal((await proxy.post('/stats/recentlookups/clear')).status, 200);
  const cleared = (await proxy.get('/stats/recentlookups')).body;
  assert.doesNotMatch(cleared, /cluster\.web\.upstream_rq_20\d/, 'cleared in every worker');
  assert.ok(Number(/^total: (\d+)$/m.exec(cleared)?.[1]) < total);

  assert.equal((await proxy.post('/stats/recentlookups/disable')).status, 200);
  await traffic(2);
  assert.match((await proxy.get('/stats/recentlookups')).body, /^Lookup tracking is not enabled/);
});

test('usedonly after traffic: counters the workers incremented are listed with their sum', async () => {
  await traffic(6);
  const summed = new RegExp(`^tcp\\.echo\\.downstream_cx_total: ${sent}$`, 'm');
  const text = await settleMatch(
    async () => (await proxy.get('/stats?usedonly&filter=^tcp\\.echo\\.')).body,
    summed,
    SETTLE_MS,
  );
  assert.match(text, summed);
  assert.doesNotMatch(
    text,
    /idle_timeout|downstream_cx_no_route/,
    'counters the traffic did not touch stay out',
  );
  const json = JSON.parse(
    (await proxy.get('/stats?usedonly&format=json&filter=downstream_cx_total')).body,
  ) as {
    stats: Array<{ name?: string; value?: number }>;
  };
  assert.deepEqual(
    json.stats.find((s) => s.name === 'tcp.echo.downstream_cx_total'),
    { name: 'tcp.echo.downstream_cx_total', value: sent },
  );
  const prom = promCounters((await proxy.get('/stats/prometheus?usedonly')).body);
  assert.ok(
    prom.some(([n, v]) => n === 'proxy_tcp_downstream_cx_total' && v === sent),
    JSON.stringify(prom),
  );
});

test('stats as deltas: every /stats sees the workers move, /reset_counters zeroes every worker, /clusters keeps the totals', async () => {
  const shown = async () => {
    const body = (await proxy.get('/stats?filter=^tcp\\.echo\\.downstream_cx_total$')).body;
    return Number(body.trim().split(': ')[1]);
  };
  await traffic(4);
  assert.equal(await settle(shown, sent, SETTLE_MS), sent);
  assert.equal(await shown(), sent, 'an answer with nothing moved changes nothing');
  assert.equal((await proxy.post('/reset_counters')).status, 200);
  assert.equal(await settle(shown, 0, SETTLE_MS), 0);
  await traffic(5);
  assert.equal(await settle(shown, 5, SETTLE_MS), 5);
  const [a, b] = await Promise.all([shown(), shown()]);
  assert.deepEqual([a, b], [5, 5], 'two /stats at once apply each delta once');
  // Per-host figures are not reset: they count every connection.
  const hostTotal = new RegExp(`^echo::127\\.0\\.0\\.1:\\d+::cx_total::${sent}$`, 'm');
  const clusters = await settleMatch(async () => (await proxy.get('/clusters')).body, hostTotal, SETTLE_MS);
  assert.match(clusters, hostTotal);
});
