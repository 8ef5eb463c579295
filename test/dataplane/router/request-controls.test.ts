/**
 * The router's control headers (src/dataplane/router/request-controls.ts), honoured for
 * internal callers as the reference's router honours them, and what the router reports back.
 * Regression: x-envoy-retry-on, x-envoy-upstream-rq-timeout-ms and the rest did nothing for
 * any caller, and no x-envoy-upstream-service-time / expected timeout was reported.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { flushAccessLogs } from '../../../src/dataplane/access-log/file-sink.js';
import { compileHttpFilters } from '../../../src/dataplane/http/filters.js';
import { routerFactory } from '../../../src/dataplane/http/filters/router/index.js';
import { readRequestControls, strictCheckFailure } from '../../../src/dataplane/router/request-controls.js';
import {
  compileRetryPolicy,
  RETRY_5XX,
  RETRY_GRPC_UNAVAILABLE,
} from '../../../src/dataplane/router/retry.js';
import { findingsOf } from '../../helpers/compile.js';
import { hcmConfig, startProxy, type TestProxy } from '../../helpers/http-dataplane.js';

const ROUTER = { respectExpectedRqTimeout: false, suppressEnvoyHeaders: false };

describe('readRequestControls', () => {
  test('timeouts: a header replaces the route timeout; a per-try timeout is read in either spelling; headers are taken out', () => {
    const headers = [
      'accept',
      '*/*',
      'x-envoy-upstream-rq-timeout-ms',
      '250',
      'x-proxy-upstream-rq-per-try-timeout-ms',
      ' 100 ',
      'x-envoy-upstream-rq-timeout-alt-response',
      '',
    ];
    const c = readRequestControls(headers, null, 15000, ROUTER);
    assert.deepEqual(
      { timeoutMs: c.timeoutMs, perTryMs: c.perTryMs, timeoutStatus: c.timeoutStatus },
      { timeoutMs: 250, perTryMs: 100, timeoutStatus: 204 },
    );
    assert.deepEqual(headers, ['accept', '*/*']);
  });

  test('malformed numbers are ignored, as the reference ignores what SimpleAtoi refuses', () => {
    for (const bad of ['-1', '1.5', 'abc', '', '1e3', '99999999999999999999'])
      assert.equal(
        readRequestControls(['x-envoy-upstream-rq-timeout-ms', bad], null, 15000, ROUTER).timeoutMs,
        15000,
        bad,
      );
  });

  test('retries: the header adds conditions to the route policy; max-retries sets the count; unknown names are ignored', () => {
    const route = compileRetryPolicy({ retry_on: 'connect-failure', num_retries: 3 }, 'r');
    const c = readRequestControls(
      ['x-envoy-retry-on', '5xx, bogus', 'x-envoy-max-retries', '2', 'x-envoy-retry-grpc-on', 'unavailable'],
      route,
      15000,
      ROUTER,
    );
    assert.ok(c.retry);
    assert.equal(c.retry.on, route.on | RETRY_5XX | RETRY_GRPC_UNAVAILABLE);
    assert.equal(c.retry.numRetries, 2);
    const none = readRequestControls(
      ['x-envoy-retry-on', 'bogus', 'x-envoy-max-retries', '5'],
      null,
      15000,
      ROUTER,
    );
    assert.equal(none.retry, null, 'no condition, no retry: max-retries alone does nothing');
    const codes = readRequestControls(
      ['x-proxy-retry-on', 'retriable-status-codes', 'x-proxy-retriable-status-codes', '409,x,418'],
      null,
      15000,
      ROUTER,
    );
    assert.deepEqual([...(codes.retry?.statusCodes ?? [])], [409, 418]);
    assert.equal(codes.retry?.numRetries, 1, 'the reference default');
  });

  test('respect_expected_rq_timeout: the front proxy’s expected timeout is the timeout; suppress keeps it', () => {
    const h = ['x-envoy-expected-rq-timeout-ms', '700', 'x-envoy-upstream-rq-timeout-ms', '50'];
    const c = readRequestControls(h, null, 15000, {
      respectExpectedRqTimeout: true,
      suppressEnvoyHeaders: true,
    });
    assert.equal(c.timeoutMs, 700);
    assert.deepEqual(h, ['x-envoy-expected-rq-timeout-ms', '700']);
  });
});

test('strictCheckFailure: the first checked header the router would not read', () => {
  const checked = ['upstream-rq-timeout-ms', 'retry-on', 'retry-grpc-on', 'max-retries'];
  assert.equal(
    strictCheckFailure(['x-envoy-upstream-rq-timeout-ms', '100', 'x-proxy-retry-on', '5xx,reset'], checked),
    null,
  );
  assert.deepEqual(strictCheckFailure(['x-proxy-max-retries', '-1'], checked), ['x-proxy-max-retries', '-1']);
  assert.deepEqual(strictCheckFailure(['x-envoy-retry-grpc-on', '5xx'], checked), [
    'x-envoy-retry-grpc-on',
    '5xx',
  ]);
  assert.equal(strictCheckFailure(['x-envoy-max-retries', 'x'], ['retry-on']), null, 'only the named ones');
  assert.deepEqual(
    findingsOf((report) =>
      compileHttpFilters(
        [
          {
            name: 'envoy.router',
            typed_config: {
              '@type': routerFactory.configType,
              strict_check_headers: ['x-envoy-retry-on', 'x-envoy-foo'],
            },
          },
        ],
        'http_filters',
        report,
      ),
    ).map((e) => e.split(': ')[1]),
    ['http_filters[0].typed_config.strict_check_headers[1]'],
  );
});

describe('control headers through a real listener', () => {
  let upstream: http.Server;
  const hits = new Map<string, number>();
  const seen: http.IncomingHttpHeaders[] = [];
  let proxy: TestProxy;
  let quiet: TestProxy;
  let dir: string;
  const timers = new Set<NodeJS.Timeout>();

  before(async () => {
    upstream = http.createServer((req, res) => {
      const path = req.url ?? '';
      const n = (hits.get(path) ?? 0) + 1;
      hits.set(path, n);
      seen.push(req.headers);
      if (path.startsWith('/flaky/') && n === 1) {
        res.writeHead(503).end('try again');
      } else if (path.startsWith('/grpc/') && n === 1) {
        res.writeHead(200, { 'content-type': 'application/grpc', 'grpc-status': '14' }).end();
      } else if (path.startsWith('/slow/') || (path.startsWith('/slowfirst/') && n === 1)) {
        const t = setTimeout(() => {
          timers.delete(t);
          res.end('late');
        }, 3000);
        timers.add(t);
        res.on('close', () => clearTimeout(t));
      } else {
        res.end('ok');
      }
    });
    await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
    const clusters = [
      {
        raw: { name: 'backend', connect_timeout: '1s' },
        addresses: [`127.0.0.1:${(upstream.address() as AddressInfo).port}`],
      },
    ];
    dir = mkdtempSync(join(tmpdir(), 'controls-'));
    const accessLog = {
      name: 'envoy.file_access_log',
      typed_config: {
        '@type': 'type.googleapis.com/envoy.config.accesslog.v2.FileAccessLog',
        path: join(dir, 'access.log'),
        format: '%REQ(X-REQUEST-ID)% %RESP(X-ENVOY-UPSTREAM-SERVICE-TIME)% %REQ(:PATH)%\n',
      },
    };
    proxy = await startProxy(
      { ...hcmConfig('backend'), use_remote_address: true, access_log: [accessLog] },
      clusters,
    );
    quiet = await startProxy(
      {
        ...hcmConfig('backend'),
        use_remote_address: true,
        http_filters: [
          {
            name: 'envoy.filters.http.router',
            typed_config: {
              '@type': 'type.googleapis.com/envoy.config.filter.http.router.v2.Router',
              suppress_envoy_headers: true,
              strict_check_headers: ['x-envoy-max-retries', 'x-envoy-retry-on'],
            },
          },
        ],
      },
      clusters,
    );
  });

  after(async () => {
    for (const t of timers) clearTimeout(t);
    await proxy.close();
    await quiet.close();
    upstream.closeAllConnections();
    upstream.close();
    rmSync(dir, { recursive: true, force: true });
  });

  interface Answer {
    status: number;
    headers: http.IncomingHttpHeaders;
  }

  /** A GET from `from` (127.0.0.1 is internal; 127.0.0.2 is not, as the reference counts). */
  function get(
    port: number,
    from: string,
    path: string,
    headers: Record<string, string> = {},
  ): Promise<Answer> {
    return new Promise((resolve, reject) => {
      const req = http.get(
        { host: '127.0.0.1', port, path, localAddress: from, headers, agent: false },
        (res) => {
          res.resume();
          res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers }));
        },
      );
      req.setTimeout(10_000, () => req.destroy(new Error(`${path} timed out`)));
      req.on('error', reject);
    });
  }

  const INTERNAL = '127.0.0.1';
  const EXTERNAL = '127.0.0.2';

  test('x-envoy-retry-on: 5xx from an internal caller retries a failing upstream; the header goes no further', async () => {
    const res = await get(proxy.port, INTERNAL, '/flaky/1', { 'x-envoy-retry-on': '5xx' });
    assert.equal(res.status, 200);
    assert.equal(hits.get('/flaky/1'), 2);
    assert.equal(seen.at(-1)?.['x-envoy-retry-on'], undefined);
    assert.match(String(res.headers['x-proxy-upstream-service-time']), /^\d+$/);
  });

  test('the same header from an external caller does nothing', async () => {
    const res = await get(proxy.port, EXTERNAL, '/flaky/2', {
      'x-envoy-retry-on': '5xx',
      'x-proxy-retry-on': '5xx',
    });
    assert.equal(res.status, 503);
    assert.equal(hits.get('/flaky/2'), 1);
  });

  test('x-envoy-max-retries: 0 turns the retries off; x-envoy-retry-grpc-on retries a grpc-status', async () => {
    const off = await get(proxy.port, INTERNAL, '/flaky/3', {
      'x-proxy-retry-on': '5xx',
      'x-envoy-max-retries': '0',
    });
    assert.equal(off.status, 503);
    assert.equal(hits.get('/flaky/3'), 1);
    const grpc = await get(proxy.port, INTERNAL, '/grpc/1', { 'x-envoy-retry-grpc-on': 'unavailable' });
    assert.equal(grpc.status, 200);
    assert.equal(hits.get('/grpc/1'), 2);
  });

  test('x-envoy-upstream-rq-timeout-ms bounds an internal request (504, or 204 with the alt-response header); not an external one', async () => {
    const internal = await get(proxy.port, INTERNAL, '/slow/1', { 'x-envoy-upstream-rq-timeout-ms': '100' });
    assert.equal(internal.status, 504);
    const alt = await get(proxy.port, INTERNAL, '/slow/2', {
      'x-envoy-upstream-rq-timeout-ms': '100',
      'x-envoy-upstream-rq-timeout-alt-response': '',
    });
    assert.equal(alt.status, 204);
    const external = await get(proxy.port, EXTERNAL, '/slow/3', { 'x-envoy-upstream-rq-timeout-ms': '100' });
    assert.equal(external.status, 200, 'answered when the upstream was, 3 s later');
  });

  test('a per-try timeout with a retry condition tries again; the upstream is told the time it has', async () => {
    const res = await get(proxy.port, INTERNAL, '/slowfirst/1', {
      'x-envoy-retry-on': '5xx',
      'x-envoy-upstream-rq-per-try-timeout-ms': '200',
    });
    assert.equal(res.status, 200);
    assert.equal(hits.get('/slowfirst/1'), 2);
    assert.equal(seen.at(-1)?.['x-proxy-expected-rq-timeout-ms'], '200');
    await get(proxy.port, INTERNAL, '/plain', { 'x-envoy-upstream-rq-timeout-ms': '5000' });
    assert.equal(seen.at(-1)?.['x-proxy-expected-rq-timeout-ms'], '5000');
    await get(proxy.port, EXTERNAL, '/plain', { 'x-envoy-expected-rq-timeout-ms': '1' });
    assert.equal(seen.at(-1)?.['x-proxy-expected-rq-timeout-ms'], '15000', 'the route default');
    assert.equal(seen.at(-1)?.['x-envoy-expected-rq-timeout-ms'], undefined);
  });

  test('suppress_envoy_headers: no expected timeout upstream, no service time downstream', async () => {
    const res = await get(quiet.port, INTERNAL, '/plain');
    assert.equal(res.status, 200);
    assert.equal(res.headers['x-proxy-upstream-service-time'], undefined);
    assert.equal(seen.at(-1)?.['x-proxy-expected-rq-timeout-ms'], undefined);
  });

  test('strict_check_headers: a malformed checked header from an internal caller is answered 400 naming it', async () => {
    const bad = await new Promise<{ status: number; body: string }>((resolve, reject) => {
      const req = http.get(
        {
          host: '127.0.0.1',
          port: quiet.port,
          path: '/plain',
          localAddress: INTERNAL,
          headers: { 'x-envoy-retry-on': '5xx,nonsense' },
          agent: false,
        },
        (res) => {
          let body = '';
          res.on('data', (c) => {
            body += c;
          });
          res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
        },
      );
      req.on('error', reject);
    });
    assert.deepEqual(bad, {
      status: 400,
      body: "invalid header 'x-envoy-retry-on' with value '5xx,nonsense'",
    });
    assert.equal((await get(quiet.port, INTERNAL, '/plain', { 'x-envoy-max-retries': '3' })).status, 200);
    // An external caller's header never reaches the check: the edge removed it.
    assert.equal((await get(quiet.port, EXTERNAL, '/plain', { 'x-envoy-max-retries': 'x' })).status, 200);
  });

  test('a circuit breaker’s 503 says x-proxy-overloaded, unless suppress_envoy_headers', async () => {
    const port = (upstream.address() as AddressInfo).port;
    const breaker = { circuit_breakers: { thresholds: [{ max_requests: 1 }] } };
    const full = await startProxy(hcmConfig('backend'), [
      { raw: { name: 'backend', connect_timeout: '1s', ...breaker }, addresses: [`127.0.0.1:${port}`] },
    ]);
    try {
      const slow = get(full.port, INTERNAL, '/slow/breaker');
      const deadline = Date.now() + 5000;
      while (!hits.has('/slow/breaker') && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
      const refused = await get(full.port, INTERNAL, '/plain');
      assert.equal(refused.status, 503);
      assert.equal(refused.headers['x-proxy-overloaded'], 'true');
      assert.equal((await slow).status, 200);
    } finally {
      await full.close();
    }
  });

  test('the access log shows the request id and the service time, by the reference’s header names', async () => {
    await get(proxy.port, INTERNAL, '/logged', { 'x-request-id': 'internal-id' });
    await get(proxy.port, EXTERNAL, '/logged', { 'x-request-id': 'spoofed-id' });
    const deadline = Date.now() + 5000;
    let lines: string[] = [];
    while (Date.now() < deadline) {
      flushAccessLogs();
      lines = readFileSync(join(dir, 'access.log'), 'utf8')
        .split('\n')
        .filter((l) => l.endsWith(' /logged'));
      if (lines.length >= 2) break;
      await new Promise((r) => setTimeout(r, 50));
    }
    assert.match(lines[0] ?? '', /^internal-id \d+ \/logged$/);
    assert.match(lines[1] ?? '', /^[0-9a-f-]{36} \d+ \/logged$/, 'an edge replaced the external id');
  });
});
