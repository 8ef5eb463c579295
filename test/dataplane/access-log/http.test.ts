import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import * as http from 'node:http';
import type * as net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { flushAccessLogs } from '../../../src/dataplane/access-log/file-sink.js';
import { hcmConfig, startProxy, type TestProxy } from '../../helpers/http-dataplane.js';

const dir = mkdtempSync(join(tmpdir(), 'access-log-'));
let upstream: http.Server;
let upPort = 0;
const proxies: TestProxy[] = [];

before(async () => {
  upstream = http.createServer((req, res) => {
    if (req.url === '/slow') return setTimeout(() => res.end('late'), 500);
    if (req.url === '/hang') return;
    if (req.url === '/drop') {
      res.writeHead(200, { 'content-length': '100' });
      res.write('partial');
      setTimeout(() => req.socket.destroy(), 20);
      return;
    }
    if (req.url === '/fail') {
      res.statusCode = 503;
      return res.end('no');
    }
    const chunks: Buffer[] = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      res.setHeader('x-answer', 'yes');
      res.end(`got ${Buffer.concat(chunks).length}`);
    });
  });
  await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
  upPort = (upstream.address() as net.AddressInfo).port;
});

after(async () => {
  for (const p of proxies) await p.close();
  upstream.close();
  rmSync(dir, { recursive: true, force: true });
});

let files = 0;
/** A proxy whose HCM logs to a fresh file with `format` (and `extra` on the access log entry). */
async function logged(
  format: Record<string, unknown>,
  routeExtras: Record<string, unknown> = {},
  clusters = [{ raw: { name: 'b' }, addresses: [`127.0.0.1:${upPort}`] }],
  extra: Record<string, unknown> = {},
) {
  const path = join(dir, `access-${++files}.log`);
  const config = {
    ...hcmConfig('b', [{ match: { prefix: '/direct' }, direct_response: { status: 299 } }], routeExtras),
    access_log: [{ name: 'envoy.file_access_log', config: { path, ...format }, ...extra }],
  };
  const proxy = await startProxy(config, clusters);
  proxies.push(proxy);
  return {
    proxy,
    lines: () => {
      flushAccessLogs();
      return readFileSync(path, 'utf8').split('\n').filter(Boolean);
    },
  };
}

function get(port: number, path: string, headers: Record<string, string> = {}, body?: string) {
  return new Promise<{ status: number; body: string }>((resolve, reject) => {
    const req = http.request(
      { port, host: '127.0.0.1', path, method: body ? 'POST' : 'GET', headers, agent: false },
      (res) => {
        let data = '';
        res.on('data', (c) => (data += c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: data }));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

async function waitFor(lines: () => string[], n: number): Promise<string[]> {
  const deadline = Date.now() + 3000;
  for (;;) {
    const got = lines();
    if (got.length >= n || Date.now() > deadline) return got;
    await new Promise((r) => setTimeout(r, 20));
  }
}

test('the default format logs a proxied request as the reference does (the upstream service time too)', async () => {
  const { proxy, lines } = await logged({});
  const res = await get(
    proxy.port,
    '/hello?x=1',
    { 'user-agent': 'tester', 'x-request-id': 'rid-1' },
    'abcde',
  );
  assert.equal(res.status, 200);
  const [line] = await waitFor(lines, 1);
  assert.match(
    line ?? '',
    new RegExp(
      `^\\[\\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\d\\.\\d{3}Z\\] "POST /hello\\?x=1 HTTP/1\\.1" 200 - 5 5 \\d+ \\d+ "-" "tester" "rid-1" "127\\.0\\.0\\.1:${proxy.port}" "127\\.0\\.0\\.1:${upPort}"$`,
    ),
  );
});

test('typed_json_format records status, bytes, response headers, addresses and flags of each outcome', async () => {
  const { proxy, lines } = await logged(
    {
      typed_json_format: {
        code: '%RESPONSE_CODE%',
        flags: '%RESPONSE_FLAGS%',
        path: '%REQ_WITHOUT_QUERY(:PATH)%',
        answer: '%RESP(X-ANSWER)%',
        sent: '%BYTES_SENT%',
        cluster: '%UPSTREAM_CLUSTER%',
        remote: '%DOWNSTREAM_REMOTE_ADDRESS_WITHOUT_PORT%',
        local: '%DOWNSTREAM_LOCAL_PORT%',
        protocol: '%PROTOCOL%',
      },
    },
    { timeout: '0.2s' },
  );
  await get(proxy.port, '/ok?q=1');
  await get(proxy.port, '/direct');
  await get(proxy.port, '/slow');
  const got = (await waitFor(lines, 3)).map((l) => JSON.parse(l));
  assert.deepEqual(got[0], {
    code: 200,
    flags: '-',
    path: '/ok',
    answer: 'yes',
    sent: 5,
    cluster: 'b',
    remote: '127.0.0.1',
    local: proxy.port,
    protocol: 'HTTP/1.1',
  });
  assert.equal(got[1].code, 299);
  assert.equal(got[1].cluster, null);
  assert.deepEqual([got[2].code, got[2].flags], [504, 'UT']);
});

test('response flags: NR for no route or cluster, UH with no host, UF when the connect fails, UO on overflow', async () => {
  const dead = http.createServer();
  await new Promise<void>((r) => dead.listen(0, '127.0.0.1', r));
  const deadPort = (dead.address() as net.AddressInfo).port;
  dead.close();
  const routes = [
    { match: { prefix: '/missing' }, route: { cluster: 'nowhere' } },
    { match: { prefix: '/empty' }, route: { cluster: 'empty' } },
    { match: { prefix: '/down' }, route: { cluster: 'down' } },
    { match: { prefix: '/full' }, route: { cluster: 'full' } },
  ];
  const path = join(dir, 'flags.log');
  const proxy = await startProxy(
    {
      stat_prefix: 'f',
      route_config: { virtual_hosts: [{ name: 'v', domains: ['only.example'], routes }] },
      access_log: [
        {
          name: 'envoy.access_loggers.file',
          typed_config: {
            '@type': 'type.googleapis.com/envoy.config.accesslog.v2.FileAccessLog',
            path,
            format: '%REQ(:PATH)% %RESPONSE_CODE% %RESPONSE_FLAGS% %RESPONSE_CODE_DETAILS%\n',
          },
        },
      ],
    },
    [
      { raw: { name: 'empty' }, addresses: [] },
      { raw: { name: 'down' }, addresses: [`127.0.0.1:${deadPort}`] },
      {
        raw: { name: 'full', circuit_breakers: { thresholds: [{ max_requests: 0 }] } },
        addresses: [`127.0.0.1:${upPort}`],
      },
    ],
  );
  proxies.push(proxy);
  const host = { host: 'only.example' };
  await get(proxy.port, '/nohost', { host: 'other.example' });
  for (const p of ['/missing', '/empty', '/down', '/full']) await get(proxy.port, p, host);
  flushAccessLogs();
  assert.deepEqual(readFileSync(path, 'utf8').split('\n').filter(Boolean), [
    '/nohost 404 NR route_not_found',
    '/missing 503 NR cluster_not_found',
    '/empty 503 UH no_healthy_upstream',
    '/down 503 UF upstream_reset_before_response_started{connection_failure}',
    '/full 503 UO upstream_reset_before_response_started{overflow}',
  ]);
});

test('%RESPONSE_CODE_DETAILS% says why: relayed, a direct response, a timeout, a filter reply', async () => {
  const path = join(dir, 'details.log');
  const proxy = await startProxy(
    {
      ...hcmConfig('b', [{ match: { prefix: '/direct' }, direct_response: { status: 299 } }], {
        timeout: '0.2s',
      }),
      http_filters: [
        {
          name: 'envoy.filters.http.fault',
          typed_config: {
            '@type': 'type.googleapis.com/envoy.extensions.filters.http.fault.v3.HTTPFault',
            abort: { http_status: 418, percentage: { numerator: 100 } },
            headers: [{ name: 'x-chaos', present_match: true }],
          },
        },
        { name: 'envoy.filters.http.router' },
      ],
      access_log: [
        {
          name: 'envoy.access_loggers.file',
          typed_config: {
            '@type': 'type.googleapis.com/envoy.extensions.access_loggers.file.v3.FileAccessLog',
            path,
            log_format: {
              json_format: {
                path: '%REQ(:PATH)%',
                code: '%RESPONSE_CODE%',
                details: '%RESPONSE_CODE_DETAILS%',
              },
            },
          },
        },
      ],
    },
    [{ raw: { name: 'b' }, addresses: [`127.0.0.1:${upPort}`] }],
  );
  proxies.push(proxy);
  await get(proxy.port, '/ok');
  await get(proxy.port, '/fail');
  await get(proxy.port, '/direct');
  await get(proxy.port, '/slow');
  await get(proxy.port, '/chaos', { 'x-chaos': '1' });
  flushAccessLogs();
  const got = readFileSync(path, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l));
  assert.deepEqual(got, [
    { path: '/ok', code: 200, details: 'via_upstream' },
    // The upstream's own 503 is relayed: its details are the upstream's, not a failure's.
    { path: '/fail', code: 503, details: 'via_upstream' },
    { path: '/direct', code: 299, details: 'direct_response' },
    { path: '/slow', code: 504, details: 'response_timeout' },
    { path: '/chaos', code: 418, details: 'fault_filter_abort' },
  ]);
});

test('DC when the client goes away before the response', async () => {
  const { proxy, lines } = await logged({
    format: '%REQ(:PATH)% %RESPONSE_CODE% %RESPONSE_FLAGS% %RESPONSE_CODE_DETAILS%\n',
  });
  await new Promise<void>((resolve) => {
    const req = http.request({ port: proxy.port, host: '127.0.0.1', path: '/hang', agent: false });
    req.on('error', () => resolve());
    req.on('close', () => resolve());
    req.end();
    setTimeout(() => req.destroy(), 100);
  });
  assert.deepEqual(await waitFor(lines, 1), ['/hang 0 DC downstream_remote_disconnect']);
});

test('URX when the retries run out on a retriable answer', async () => {
  const { proxy, lines } = await logged(
    { format: '%REQ(:PATH)% %RESPONSE_CODE% %RESPONSE_FLAGS%\n' },
    { retry_policy: { retry_on: '5xx', num_retries: 1 } },
  );
  assert.equal((await get(proxy.port, '/fail')).status, 503);
  assert.deepEqual(await waitFor(lines, 1), ['/fail 503 URX']);
});

test('filters pick which requests are logged', async () => {
  const { proxy, lines } = await logged({ format: '%REQ(:PATH)% %RESPONSE_CODE%\n' }, {}, undefined, {
    filter: {
      or_filter: {
        filters: [
          {
            status_code_filter: { comparison: { op: 'GE', value: { default_value: 299, runtime_key: 'k' } } },
          },
          { header_filter: { header: { name: 'x-log', exact_match: 'yes' } } },
        ],
      },
    },
  });
  await get(proxy.port, '/quiet');
  await get(proxy.port, '/direct');
  await get(proxy.port, '/asked', { 'x-log': 'yes' });
  assert.deepEqual(await waitFor(lines, 2), ['/direct 299', '/asked 200']);
});

test('the router upstream_log logs requests that went upstream only', async () => {
  const path = join(dir, 'upstream.log');
  const proxy = await startProxy(
    {
      ...hcmConfig('b', [{ match: { prefix: '/direct' }, direct_response: { status: 299 } }]),
      http_filters: [
        {
          name: 'envoy.router',
          typed_config: {
            '@type': 'type.googleapis.com/envoy.config.filter.http.router.v2.Router',
            upstream_log: [
              {
                name: 'envoy.file_access_log',
                config: { path, format: 'up %UPSTREAM_HOST% %RESPONSE_CODE%\n' },
              },
            ],
          },
        },
      ],
    },
    [{ raw: { name: 'b' }, addresses: [`127.0.0.1:${upPort}`] }],
  );
  proxies.push(proxy);
  await get(proxy.port, '/direct');
  await get(proxy.port, '/x');
  flushAccessLogs();
  assert.deepEqual(readFileSync(path, 'utf8').split('\n').filter(Boolean), [`up 127.0.0.1:${upPort} 200`]);
});

test('HTTP/2 requests are logged with their protocol and peer', async () => {
  const http2 = await import('node:http2');
  const { proxy, lines } = await logged({
    format:
      '%PROTOCOL% %REQ(:METHOD)% %REQ(:PATH)% %RESPONSE_CODE% %BYTES_SENT% %DOWNSTREAM_REMOTE_ADDRESS_WITHOUT_PORT%\n',
  });
  const session = http2.connect(`http://127.0.0.1:${proxy.port}`);
  try {
    const status = await new Promise<number>((resolve, reject) => {
      const stream = session.request({ ':path': '/h2' });
      let code = 0;
      stream.on('response', (h) => (code = Number(h[':status'])));
      stream.on('data', () => {});
      stream.on('end', () => resolve(code));
      stream.on('error', reject);
      stream.setTimeout(3000, () => stream.close());
    });
    assert.equal(status, 200);
  } finally {
    session.close();
  }
  assert.deepEqual(await waitFor(lines, 1), ['HTTP/2 GET /h2 200 5 127.0.0.1']);
});

test('LH when the health check filter fails checks, SI on the stream idle timeout, UC when the upstream drops mid-body', async () => {
  const { healthCheckFailed } = await import('../../../events/index.js');
  const path = join(dir, 'more-flags.log');
  const proxy = await startProxy(
    {
      ...hcmConfig('b'),
      stream_idle_timeout: '0.2s',
      http_filters: [
        {
          name: 'envoy.health_check',
          config: { pass_through_mode: false, headers: [{ name: ':path', exact_match: '/hc' }] },
        },
        { name: 'envoy.router' },
      ],
      access_log: [
        {
          name: 'envoy.file_access_log',
          config: { path, format: '%REQ(:PATH)% %RESPONSE_CODE% %RESPONSE_FLAGS%\n' },
        },
      ],
    },
    [{ raw: { name: 'b' }, addresses: [`127.0.0.1:${upPort}`] }],
  );
  proxies.push(proxy);
  assert.equal((await get(proxy.port, '/hc')).status, 200);
  proxy.ctx.store.dispatch(healthCheckFailed({}), 'test');
  assert.equal((await get(proxy.port, '/hc')).status, 503);
  assert.equal((await get(proxy.port, '/hang')).status, 408);
  // The response starts, then the upstream drops: the client sees a truncated body.
  await new Promise<void>((resolve) => {
    const req = http.get({ port: proxy.port, host: '127.0.0.1', path: '/drop', agent: false }, (res) => {
      res.resume();
      res.on('close', () => resolve());
    });
    req.on('error', () => resolve());
    req.setTimeout(3000, () => req.destroy());
  });
  const deadline = Date.now() + 3000;
  let got: string[] = [];
  while (got.length < 4 && Date.now() < deadline) {
    flushAccessLogs();
    got = readFileSync(path, 'utf8').split('\n').filter(Boolean);
    await new Promise((r) => setTimeout(r, 20));
  }
  assert.deepEqual(got, ['/hc 200 -', '/hc 503 LH', '/hang 408 SI', '/drop 200 UC']);
});

test('%UPSTREAM_LOCAL_ADDRESS% is the local end of the upstream connection the upstream saw (HTTP/1 and HTTP/2); a direct response has none', async () => {
  const http2 = await import('node:http2');
  const peerOf = (socket: net.Socket) => `${socket.remoteAddress}:${socket.remotePort}`;
  const h1 = http.createServer((req, res) => res.setHeader('x-peer', peerOf(req.socket)).end('ok'));
  const h2 = http2.createServer((req, res) => {
    res.setHeader('x-peer', peerOf(req.socket as net.Socket));
    res.end('ok');
  });
  for (const server of [h1, h2]) await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const portOf = (server: net.Server) => (server.address() as net.AddressInfo).port;
  try {
    for (const [server, http2Options] of [
      [h1, {}],
      [h2, { http2_protocol_options: {} }],
    ] as const) {
      const { proxy, lines } = await logged(
        { format: '%REQ(:PATH)% %UPSTREAM_LOCAL_ADDRESS% %RESPONSE_CODE_DETAILS%\n' },
        {},
        [{ raw: { name: 'b', ...http2Options }, addresses: [`127.0.0.1:${portOf(server)}`] }],
      );
      const res = await fetch(`http://127.0.0.1:${proxy.port}/up`);
      const peer = res.headers.get('x-peer');
      await res.text();
      await fetch(`http://127.0.0.1:${proxy.port}/direct`).then((r) => r.text());
      assert.match(peer ?? '', /^127\.0\.0\.1:\d+$/);
      assert.deepEqual(await waitFor(lines, 2), [`/up ${peer} via_upstream`, '/direct - direct_response']);
    }
  } finally {
    h1.close();
    h2.close();
  }
});

test('response_headers_to_add renders %RESPONSE_CODE_DETAILS% and %UPSTREAM_LOCAL_ADDRESS%; request headers, made before, get neither', async () => {
  let seen: http.IncomingHttpHeaders = {};
  const server = http.createServer((req, res) => {
    seen = req.headers;
    res.setHeader('x-peer', `${req.socket.remoteAddress}:${req.socket.remotePort}`).end('ok');
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const add = (key: string, value: string) => ({ header: { key, value }, append: false });
  try {
    const config = hcmConfig('b', [{ match: { prefix: '/direct' }, direct_response: { status: 299 } }]);
    const routes = config.route_config as { virtual_hosts: Array<Record<string, unknown>> };
    Object.assign(routes.virtual_hosts[0]!, {
      response_headers_to_add: [
        add('x-details', '%RESPONSE_CODE_DETAILS%'),
        add('x-local', '%UPSTREAM_LOCAL_ADDRESS%'),
      ],
      request_headers_to_add: [
        add('x-details', '%RESPONSE_CODE_DETAILS%'),
        add('x-local', '%UPSTREAM_LOCAL_ADDRESS%'),
      ],
    });
    const proxy = await startProxy(config, [
      { raw: { name: 'b' }, addresses: [`127.0.0.1:${(server.address() as net.AddressInfo).port}`] },
    ]);
    proxies.push(proxy);
    const up = await fetch(`http://127.0.0.1:${proxy.port}/up`);
    await up.text();
    assert.equal(up.headers.get('x-details'), 'via_upstream');
    assert.equal(up.headers.get('x-local'), up.headers.get('x-peer'));
    assert.equal(seen['x-details'], undefined);
    assert.equal(seen['x-local'], undefined);
    const direct = await fetch(`http://127.0.0.1:${proxy.port}/direct`);
    await direct.text();
    assert.equal(direct.headers.get('x-details'), 'direct_response');
    assert.equal(direct.headers.get('x-local'), null);
  } finally {
    server.close();
  }
});
