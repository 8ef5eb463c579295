import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import * as http from 'node:http';
import * as http2 from 'node:http2';
import type * as net from 'node:net';
import { after, before, test } from 'node:test';
import { promisify } from 'node:util';
import { healthCheckFailed, healthCheckOk } from '../../../events/index.js';
import { rawExchange, startProxy, type TestProxy } from '../../helpers/http-dataplane.js';

const run = promisify(execFile);
let h1: http.Server;
let h2: http2.Http2Server;
let proxy: TestProxy;

function config(): Record<string, unknown> {
  return {
    stat_prefix: 'edge',
    route_config: {
      virtual_hosts: [
        {
          name: 'web',
          domains: ['web.test'],
          routes: [
            {
              match: { prefix: '/direct' },
              direct_response: { status: 418, body: { inline_string: 'teapot' } },
            },
            { match: { prefix: '/old' }, redirect: { path_redirect: '/new' } },
            {
              match: { prefix: '/split' },
              route: {
                weighted_clusters: {
                  clusters: [
                    { name: 'one', weight: 50 },
                    { name: 'two', weight: 50 },
                  ],
                },
              },
            },
            { match: { prefix: '/h2' }, route: { cluster: 'h2', prefix_rewrite: '/via-h2' } },
            { match: { prefix: '/' }, route: { cluster: 'one', host_rewrite: 'rewritten' } },
          ],
        },
      ],
    },
    http_filters: [
      {
        name: 'envoy.health_check',
        config: { pass_through_mode: false, headers: [{ name: ':path', exact_match: '/healthz' }] },
      },
      { name: 'envoy.router' },
    ],
  };
}

before(async () => {
  h1 = http.createServer((req, res) => res.end(`h1 ${req.headers.host} ${req.url} ${req.httpVersion}`));
  await new Promise<void>((r) => h1.listen(0, '127.0.0.1', r));
  h2 = http2.createServer();
  h2.on('stream', (stream, headers) => {
    stream.respond({ ':status': 200 });
    stream.end(`h2 ${headers[':path']}`);
  });
  await new Promise<void>((r) => h2.listen(0, '127.0.0.1', r));
  const p1 = (h1.address() as net.AddressInfo).port;
  const p2 = (h2.address() as net.AddressInfo).port;
  const h2b = http.createServer((_req, res) => res.end('two'));
  await new Promise<void>((r) => h2b.listen(0, '127.0.0.1', r));
  h1.on('close', () => h2b.close());
  proxy = await startProxy(config(), [
    { raw: { name: 'one' }, addresses: [`127.0.0.1:${p1}`] },
    { raw: { name: 'two' }, addresses: [`127.0.0.1:${(h2b.address() as net.AddressInfo).port}`] },
    { raw: { name: 'h2', http2_protocol_options: {} }, addresses: [`127.0.0.1:${p2}`] },
  ]);
});

after(async () => {
  await proxy.close();
  h1.close();
  h1.closeAllConnections();
  h2.close();
});

const get = (path: string, host = 'web.test') =>
  rawExchange(proxy.port, `GET ${path} HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`);

test('host routing, direct response, redirect, no route', async () => {
  assert.match(await get('/direct'), /^HTTP\/1.1 418 [\s\S]*\r\n\r\nteapot$/);
  assert.match(await get('/old?a=1'), /^HTTP\/1.1 301 [\s\S]*location: http:\/\/web.test\/new\?a=1/);
  assert.match(await get('/x'), /h1 rewritten \/x 1.1$/);
  assert.match(await get('/x', 'other.test'), /^HTTP\/1.1 404/);
  assert.equal(proxy.counter('http.edge.no_route'), 1);
  assert.equal(proxy.counter('http.edge.rq_direct_response'), 1);
});

test('weighted clusters split traffic', async () => {
  const seen = { h1: 0, two: 0 };
  for (let i = 0; i < 40; i++) {
    const out = await get('/split');
    if (out.endsWith('two')) seen.two++;
    else seen.h1++;
  }
  assert.ok(seen.h1 > 5 && seen.two > 5, JSON.stringify(seen));
});

test('health check filter answers from the server health flag', async () => {
  assert.match(await get('/healthz'), /^HTTP\/1.1 200/);
  proxy.ctx.store.dispatch(healthCheckFailed({}), 'test');
  assert.match(await get('/healthz'), /^HTTP\/1.1 503/);
  proxy.ctx.store.dispatch(healthCheckOk({}), 'test');
  assert.match(await get('/healthz'), /^HTTP\/1.1 200/);
});

test('HTTP/2 downstream (node:http2 client) to HTTP/1 and HTTP/2 upstreams', async () => {
  const client = http2.connect(`http://127.0.0.1:${proxy.port}`);
  const fetch2 = (path: string) =>
    new Promise<{ status: number; body: string }>((resolve, reject) => {
      const s = client.request({ ':path': path, ':authority': 'web.test' });
      let status = 0;
      let body = '';
      s.on('response', (h) => (status = Number(h[':status'])));
      s.on('data', (c) => (body += c));
      s.on('end', () => resolve({ status, body }));
      s.on('error', reject);
    });
  try {
    assert.deepEqual(await fetch2('/x'), { status: 200, body: 'h1 rewritten /x 1.1' });
    assert.deepEqual(await fetch2('/h2/y'), { status: 200, body: 'h2 /via-h2/y' });
    assert.deepEqual(await fetch2('/direct'), { status: 418, body: 'teapot' });
    assert.equal(proxy.counter('http.edge.downstream_cx_http2_total'), 1);
    assert.equal(proxy.counter('cluster.h2.upstream_cx_http2_total'), 1);
  } finally {
    client.close();
  }
});

test('curl --http2-prior-knowledge and nghttp', async (t) => {
  try {
    const { stdout } = await run('curl', [
      '-s',
      '--http2-prior-knowledge',
      '-H',
      'Host: web.test',
      `http://127.0.0.1:${proxy.port}/direct`,
    ]);
    assert.equal(stdout, 'teapot');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') t.skip('curl not installed');
    else throw err;
  }
  try {
    const { stdout } = await run('nghttp', [
      '-H',
      ':authority: web.test',
      `http://127.0.0.1:${proxy.port}/direct`,
    ]);
    assert.equal(stdout, 'teapot');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') t.skip('nghttp not installed');
    else throw err;
  }
});

test('drain: HTTP/1 responses carry Connection: close', async () => {
  const out = await rawExchange(proxy.port, 'GET /direct HTTP/1.1\r\nHost: web.test\r\n\r\n', 300);
  assert.doesNotMatch(out, /connection: close/);
  proxy.hcm.drain('immediate', 0);
  const drained = await rawExchange(proxy.port, 'GET /direct HTTP/1.1\r\nHost: web.test\r\n\r\n', 1000);
  assert.match(drained, /connection: close/);
});
