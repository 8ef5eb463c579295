import assert from 'node:assert/strict';
import * as http from 'node:http';
import * as net from 'node:net';
import type { AddressInfo } from 'node:net';
import { test } from 'node:test';
import {
  connectionNominated,
  downstreamResponseHeaders,
  upstreamRequestHead,
} from '../../../src/dataplane/http/headers.js';
import type { HttpRequest } from '../../../src/dataplane/codec/request.js';
import type { CompiledRoute } from '../../../src/dataplane/router/table.js';
import { hcmWithRoutes, httpBootstrap } from '../../helpers/bootstraps.js';
import { cluster } from '../../helpers/dataplane.js';
import { hcmConfig, rawExchange, startProxy } from '../../helpers/http-dataplane.js';
import { startProxyProcess } from '../../helpers/proxy-process.js';

function request(headers: string[]): HttpRequest {
  return {
    method: 'POST',
    path: '/api/v1/items?x=1',
    authority: 'front.example',
    scheme: 'http',
    headers,
    protocol: 'HTTP/1.1',
    remoteIp: '10.0.0.9',
    contentLength: 3,
    hasBody: true,
  };
}

function route(
  rewrites: Partial<Pick<CompiledRoute, 'prefix' | 'prefixRewrite' | 'hostRewrite'>>,
): CompiledRoute {
  return { prefix: null, prefixRewrite: null, hostRewrite: null, ...rewrites } as CompiledRoute;
}

const options = {};

test('the request head carries the request headers as the edge step left them, in a copy', () => {
  const req = request(['accept', '*/*', 'x-forwarded-for', '1.1.1.1']);
  const head = upstreamRequestHead(req, route({}), options);
  assert.deepEqual(head.headers, ['accept', '*/*', 'x-forwarded-for', '1.1.1.1']);
  assert.notEqual(head.headers, req.headers, 'route mutations must not touch what the access log reads');
  // The copy is made with free slots past the fields: none of them may show as a field.
  head.headers.push('x-proxy-expected-rq-timeout-ms', '15000');
  assert.deepEqual(head.headers, [
    'accept',
    '*/*',
    'x-forwarded-for',
    '1.1.1.1',
    'x-proxy-expected-rq-timeout-ms',
    '15000',
  ]);
  assert.deepEqual(req.headers, ['accept', '*/*', 'x-forwarded-for', '1.1.1.1']);
  assert.deepEqual(
    { method: head.method, path: head.path, authority: head.authority, length: head.contentLength },
    { method: 'POST', path: '/api/v1/items?x=1', authority: 'front.example', length: 3 },
  );
});

test('prefix and host rewrites apply to the path and the authority', () => {
  const head = upstreamRequestHead(
    request([]),
    route({ prefix: '/api/v1', prefixRewrite: '/v2', hostRewrite: 'back.internal' }),
    options,
  );
  assert.equal(head.path, '/v2/items?x=1');
  assert.equal(head.authority, 'back.internal');
});

test('response headers lose hop-by-hop headers, the length and the upstream server name', () => {
  assert.deepEqual(
    downstreamResponseHeaders(
      [
        'connection',
        'keep-alive',
        'content-type',
        'text/plain',
        'content-length',
        '2',
        'server',
        'nginx',
        'transfer-encoding',
        'chunked',
        'x-a',
        '1',
      ],
      'proxy',
    ),
    ['content-type', 'text/plain', 'x-a', '1', 'server', 'proxy'],
  );
});

test('Connection: keep-alive names nothing beyond the hop-by-hop fields; other names are kept, close too', () => {
  assert.equal(connectionNominated(['connection', 'keep-alive']), null);
  assert.equal(connectionNominated(['connection', ' Keep-Alive\t']), null);
  assert.equal(connectionNominated(['connection', 'keep-alive, Upgrade']), null);
  assert.deepEqual(connectionNominated(['connection', 'Keep-Alive, X-Secret']), new Set(['x-secret']));
  assert.deepEqual(connectionNominated(['connection', 'close']), new Set(['close']));
  assert.deepEqual(connectionNominated(['connection', 'keep-alivex']), new Set(['keep-alivex']));
  assert.deepEqual(
    downstreamResponseHeaders(['connection', 'keep-alive', 'keep-alive', 'timeout=5', 'x-a', '1'], 'proxy'),
    ['x-a', '1', 'server', 'proxy'],
  );
});

// Root cause: the response path dropped the fixed hop-by-hop names but never read the
// upstream's `Connection` list, so a field it names (`Connection: X-Secret`), meant for the
// upstream's hop alone (RFC 9110 7.6.1), reached the client.
test("response fields an upstream's Connection names stop at the proxy", async () => {
  assert.deepEqual(
    downstreamResponseHeaders(
      [
        'connection',
        'keep-alive, X-Secret',
        'x-secret',
        'a',
        'connection',
        ' x-other ,',
        'x-other',
        'b',
        'x-kept',
        'c',
      ],
      'proxy',
    ),
    ['x-kept', 'c', 'server', 'proxy'],
  );
  const origin = net.createServer((socket) => {
    socket.once('data', () =>
      socket.end(
        'HTTP/1.1 200 OK\r\nConnection: keep-alive, X-Secret\r\nX-Secret: leak\r\nX-Kept: k\r\nContent-Length: 2\r\n\r\nok',
      ),
    );
  });
  await new Promise<void>((r) => origin.listen(0, '127.0.0.1', r));
  const proxy = await startProxyProcess(
    httpBootstrap(
      [cluster('up', [(origin.address() as AddressInfo).port])],
      hcmWithRoutes([{ match: { prefix: '/' }, route: { cluster: 'up' } }]),
    ),
    ['--concurrency', '2'],
  );
  try {
    const res = await fetch(`http://127.0.0.1:${await proxy.listenerPort('http')}/`);
    assert.equal(await res.text(), 'ok');
    assert.equal(res.headers.get('x-kept'), 'k');
    assert.equal(res.headers.get('x-secret'), null);
  } finally {
    await proxy.stop();
    origin.close();
  }
});

test('server_header_transformation: the upstream server replaced, kept when set, or passed through', () => {
  const up = ['server', 'nginx', 'x-a', '1'];
  assert.deepEqual(downstreamResponseHeaders(up, 'proxy', null, 'OVERWRITE'), [
    'x-a',
    '1',
    'server',
    'proxy',
  ]);
  assert.deepEqual(downstreamResponseHeaders(up, 'proxy', null, 'APPEND_IF_ABSENT'), up);
  assert.deepEqual(downstreamResponseHeaders(['x-a', '1'], 'proxy', null, 'APPEND_IF_ABSENT'), [
    'x-a',
    '1',
    'server',
    'proxy',
  ]);
  assert.deepEqual(downstreamResponseHeaders(['x-a', '1'], 'proxy', null, 'PASS_THROUGH'), ['x-a', '1']);
  assert.deepEqual(downstreamResponseHeaders(up, 'proxy', '7', 'PASS_THROUGH'), [
    ...up,
    'x-proxy-upstream-service-time',
    '7',
  ]);
});

test('server_header_transformation over a real listener: PASS_THROUGH keeps the origin’s and adds none to local replies', async () => {
  const upstream = http.createServer((_req, res) => res.writeHead(200, { server: 'origin/1' }).end());
  await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
  const clusters = [
    {
      raw: { name: 'backend', connect_timeout: '1s' },
      addresses: [`127.0.0.1:${(upstream.address() as AddressInfo).port}`],
    },
  ];
  const local = [{ match: { prefix: '/local' }, direct_response: { status: 200 } }];
  const pass = await startProxy(
    { ...hcmConfig('backend', local), server_header_transformation: 'PASS_THROUGH' },
    clusters,
  );
  const append = await startProxy(
    { ...hcmConfig('backend', local), server_header_transformation: 'APPEND_IF_ABSENT' },
    clusters,
  );
  try {
    const server = async (port: number, path: string) =>
      (await fetch(`http://127.0.0.1:${port}${path}`)).headers.get('server');
    assert.equal(await server(pass.port, '/'), 'origin/1');
    assert.equal(await server(pass.port, '/local'), null);
    assert.equal(await server(append.port, '/'), 'origin/1');
    assert.equal(await server(append.port, '/local'), 'proxy');
  } finally {
    await pass.close();
    await append.close();
    upstream.close();
  }
});

// Root cause: the HTTP/1 codec's own answers (a malformed request's 400, a 431) were written
// without `server`, where every other local reply has it and the reference's codec answers
// through its connection manager's local reply, which sets it as server_header_transformation says.
test('the codec’s own 400 and 431 carry server as local replies do; PASS_THROUGH none', async () => {
  const local = [{ match: { prefix: '/' }, direct_response: { status: 200 } }];
  const named = await startProxy({ ...hcmConfig('none', local), server_name: 'edge-1' }, []);
  const pass = await startProxy(
    { ...hcmConfig('none', local), server_header_transformation: 'PASS_THROUGH' },
    [],
  );
  try {
    const bad = 'GET / HTTP/1.1\r\nHost: a\r\nX-A: a\rb\r\n\r\n';
    const big = `GET / HTTP/1.1\r\nHost: a\r\nX-Big: ${'a'.repeat(70_000)}\r\n\r\n`;
    for (const [request, status] of [
      [bad, 400],
      [big, 431],
    ] as const) {
      const answer = await rawExchange(named.port, request, 5000);
      assert.match(answer, new RegExp(`^HTTP/1\\.1 ${status} `));
      assert.match(answer, /\r\nserver: edge-1\r\n/);
      const passed = await rawExchange(pass.port, request, 5000);
      assert.match(passed, new RegExp(`^HTTP/1\\.1 ${status} `));
      assert.doesNotMatch(passed, /\r\nserver:/);
    }
  } finally {
    await named.close();
    await pass.close();
  }
});

test('add_user_agent: the local cluster and node go upstream; a user-agent the client sent is kept', () => {
  const identity = { cluster: 'front', node: 'front-1' };
  const pick = (headers: string[], name: string) => headers.filter((_, i) => headers[i - (i % 2)] === name);
  const bare = upstreamRequestHead(request(['x-proxy-downstream-service-cluster', 'spoofed']), route({}), {
    ...options,
    userAgentIdentity: identity,
  });
  assert.deepEqual(pick(bare.headers, 'x-proxy-downstream-service-cluster'), [
    'x-proxy-downstream-service-cluster',
    'front',
  ]);
  assert.deepEqual(pick(bare.headers, 'user-agent'), ['user-agent', 'front']);
  assert.deepEqual(pick(bare.headers, 'x-proxy-downstream-service-node'), [
    'x-proxy-downstream-service-node',
    'front-1',
  ]);
  const browser = upstreamRequestHead(request(['user-agent', 'curl/8']), route({}), {
    ...options,
    userAgentIdentity: { cluster: 'front', node: '' },
  });
  assert.deepEqual(pick(browser.headers, 'user-agent'), ['user-agent', 'curl/8']);
  assert.deepEqual(pick(browser.headers, 'x-proxy-downstream-service-node'), [], 'no node name, no header');
  const off = upstreamRequestHead(request([]), route({}), options);
  assert.deepEqual(pick(off.headers, 'user-agent'), [], 'nothing without add_user_agent');
});

test('add_user_agent in a served HCM names --service-cluster and --service-node over the bootstrap node', async () => {
  const seen: http.IncomingHttpHeaders[] = [];
  const upstream = http.createServer((req, res) => {
    seen.push(req.headers);
    res.end();
  });
  await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
  const port = (upstream.address() as AddressInfo).port;
  const hcm = {
    ...hcmWithRoutes([{ match: { prefix: '/' }, route: { cluster: 'up' } }]),
    add_user_agent: true,
  };
  const bootstrap = {
    ...httpBootstrap([cluster('up', [port])], hcm),
    node: { id: 'node-from-bootstrap', cluster: 'cluster-from-bootstrap' },
  };
  const proxy = await startProxyProcess(bootstrap, ['--service-cluster', 'front']);
  try {
    const res = await fetch(`http://127.0.0.1:${await proxy.listenerPort('http')}/`, {
      headers: { 'user-agent': '' },
    });
    assert.equal(res.status, 200);
    assert.equal(seen[0]?.['x-proxy-downstream-service-cluster'], 'front');
    assert.equal(seen[0]?.['user-agent'], 'front', 'an empty user-agent is replaced');
    assert.equal(seen[0]?.['x-proxy-downstream-service-node'], 'node-from-bootstrap');
  } finally {
    await proxy.stop();
    upstream.close();
  }
});
