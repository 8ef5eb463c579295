import assert from 'node:assert/strict';
import * as http from 'node:http';
import type * as net from 'node:net';
import { after, before, test } from 'node:test';
import { freePort } from '../../helpers/free-port.js';
import { hcmConfig, startProxy } from '../../helpers/http-dataplane.js';

let upstream: http.Server;
let upPort = 0;
const failFirst = new Map<string, number>();

before(async () => {
  upstream = http.createServer((req, res) => {
    const url = req.url ?? '/';
    if (url.startsWith('/flaky')) {
      const key = String(req.headers['x-key']);
      const n = failFirst.get(key) ?? 0;
      failFirst.set(key, n + 1);
      res.statusCode = n < Number(req.headers['x-fail'] ?? 0) ? 503 : 200;
      return res.end(`attempt ${n}`);
    }
    if (url === '/slow') return setTimeout(() => res.end('late'), 600);
    if (url === '/hang') return;
    if (url === '/reset') return req.socket.destroy();
    if (url === '/chunked') {
      res.write('part1-');
      setTimeout(() => res.end('part2'), 10);
      return;
    }
    const chunks: Buffer[] = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () =>
      res.end(`got ${Buffer.concat(chunks).length} ${req.headers['transfer-encoding'] ?? ''}`),
    );
  });
  await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
  upPort = (upstream.address() as net.AddressInfo).port;
});

after(() => {
  upstream.close();
  upstream.closeAllConnections();
});

test('retries: num_retries bounds attempts, retry_success counted', async () => {
  const proxy = await startProxy(
    hcmConfig('b', [], {
      retry_policy: { retry_on: '5xx', num_retries: 2, retry_back_off: { base_interval: '0.001s' } },
    }),
    [{ raw: { name: 'b' }, addresses: [`127.0.0.1:${upPort}`] }],
  );
  try {
    let res = await fetch(`http://127.0.0.1:${proxy.port}/flaky`, {
      headers: { 'x-key': 'a', 'x-fail': '2' },
    });
    assert.equal(res.status, 200);
    assert.equal(await res.text(), 'attempt 2');
    assert.equal(proxy.counter('cluster.b.upstream_rq_retry'), 2);
    assert.equal(proxy.counter('cluster.b.upstream_rq_retry_success'), 1);
    res = await fetch(`http://127.0.0.1:${proxy.port}/flaky`, { headers: { 'x-key': 'b', 'x-fail': '5' } });
    assert.equal(res.status, 503);
    assert.equal(await res.text(), 'attempt 2');
    assert.equal(proxy.counter('cluster.b.upstream_rq_503'), 5);
  } finally {
    await proxy.close();
  }
});

test('retries: max_retries circuit breaker overflows', async () => {
  const proxy = await startProxy(
    hcmConfig('b', [], {
      retry_policy: { retry_on: '5xx', num_retries: 3, retry_back_off: { base_interval: '0.2s' } },
    }),
    [
      {
        raw: { name: 'b', circuit_breakers: { thresholds: [{ max_retries: 1 }] } },
        addresses: [`127.0.0.1:${upPort}`],
      },
    ],
  );
  try {
    const statuses = await Promise.all(
      ['c1', 'c2', 'c3'].map((k) =>
        fetch(`http://127.0.0.1:${proxy.port}/flaky`, { headers: { 'x-key': k, 'x-fail': '1' } }).then(
          (r) => r.status,
        ),
      ),
    );
    assert.deepEqual(statuses.slice().sort(), [200, 503, 503]);
    assert.equal(proxy.counter('cluster.b.upstream_rq_retry_overflow'), 2);
  } finally {
    await proxy.close();
  }
});

test('circuit breaker max_requests overflow -> 503 and pending_overflow', async () => {
  const proxy = await startProxy(hcmConfig('b'), [
    {
      raw: { name: 'b', circuit_breakers: { thresholds: [{ max_requests: 1 }] } },
      addresses: [`127.0.0.1:${upPort}`],
    },
  ]);
  try {
    const slow = fetch(`http://127.0.0.1:${proxy.port}/slow`);
    await new Promise((r) => setTimeout(r, 100));
    assert.equal(proxy.gauge('cluster.b.circuit_breakers.default.rq_open'), 1);
    const res = await fetch(`http://127.0.0.1:${proxy.port}/x`);
    assert.equal(res.status, 503);
    assert.match(await res.text(), /reset reason: overflow/);
    assert.equal(proxy.counter('cluster.b.upstream_rq_pending_overflow'), 1);
    assert.equal((await slow).status, 200);
  } finally {
    await proxy.close();
  }
});

test('connect failure -> 503 with connect_fail on cluster and host', async () => {
  const dead = await freePort();
  const proxy = await startProxy(hcmConfig('b'), [
    { raw: { name: 'b', connect_timeout: '1s' }, addresses: [`127.0.0.1:${dead}`] },
  ]);
  try {
    const res = await fetch(`http://127.0.0.1:${proxy.port}/`);
    assert.equal(res.status, 503);
    assert.equal(
      await res.text(),
      'upstream connect error or disconnect/reset before headers. reset reason: connection failure',
    );
    assert.equal(proxy.counter('cluster.b.upstream_cx_connect_fail'), 1);
    assert.equal(proxy.clusters.get('b')?.hosts[0]?.stats.cx_connect_fail, 1);
    assert.equal(proxy.clusters.get('b')?.hosts[0]?.stats.rq_active, 0);
  } finally {
    await proxy.close();
  }
});

test('upstream reset before headers -> 503; route timeout -> 504', async () => {
  const proxy = await startProxy(
    hcmConfig('b', [{ match: { prefix: '/hang' }, route: { cluster: 'b', timeout: '0.2s' } }]),
    [{ raw: { name: 'b' }, addresses: [`127.0.0.1:${upPort}`] }],
  );
  try {
    let res = await fetch(`http://127.0.0.1:${proxy.port}/reset`);
    assert.equal(res.status, 503);
    assert.match(await res.text(), /reset reason: connection termination/);
    res = await fetch(`http://127.0.0.1:${proxy.port}/hang`);
    assert.equal(res.status, 504);
    assert.equal(await res.text(), 'upstream request timeout');
    assert.equal(proxy.counter('cluster.b.upstream_rq_timeout'), 1);
    assert.equal(proxy.clusters.get('b')?.hosts[0]?.stats.rq_timeout, 1);
  } finally {
    await proxy.close();
  }
});

test('chunked request and response bodies stream through', async () => {
  const proxy = await startProxy(hcmConfig('b'), [
    { raw: { name: 'b' }, addresses: [`127.0.0.1:${upPort}`] },
  ]);
  try {
    const out = await new Promise<string>((resolve, reject) => {
      const r = http.request(
        { port: proxy.port, host: '127.0.0.1', method: 'POST', path: '/echo' },
        (res) => {
          let body = '';
          res.on('data', (c) => (body += c));
          res.on('end', () => resolve(body));
        },
      );
      r.on('error', reject);
      r.write('abc');
      setTimeout(() => r.end('defg'), 20);
    });
    assert.equal(out, 'got 7 chunked');
    const res = await fetch(`http://127.0.0.1:${proxy.port}/chunked`);
    assert.equal(await res.text(), 'part1-part2');
  } finally {
    await proxy.close();
  }
});
