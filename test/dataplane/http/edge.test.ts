/**
 * The edge step (src/dataplane/http/edge.ts): who the client is, internal or external, and
 * which control headers survive. Regression: `use_remote_address: true` did not make an edge;
 * an external client's x-envoy-* / x-proxy-* control headers reached the router and the
 * upstream unchanged, and its x-request-id was kept.
 */
import assert from 'node:assert/strict';
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import fc from 'fast-check';
import type { HttpRequest } from '../../../src/dataplane/codec/request.js';
import {
  applyEdge,
  compileEdge,
  EDGE_EXTERNAL,
  EDGE_INTERNAL,
  EDGE_ROUTER_HEADERS,
  type EdgeSpec,
  underscoreHeaders,
} from '../../../src/dataplane/http/edge.js';
import { hcmWithRoutes, httpBootstrap } from '../../helpers/bootstraps.js';
import { findingsOf } from '../../helpers/compile.js';
import { headersFrame, outcome, rawH2 } from '../../helpers/h2-frames.js';
import { cluster } from '../../helpers/dataplane.js';
import { hcmConfig, startProxy, type TestProxy } from '../../helpers/http-dataplane.js';
import { startProxyProcess } from '../../helpers/proxy-process.js';

const RUNS = Number(process.env.FUZZ_RUNS ?? 300);

const SPEC: EdgeSpec = {
  useRemoteAddress: false,
  xffNumTrustedHops: 0,
  skipXffAppend: false,
  unixSocketsInternal: false,
  generateRequestId: true,
  preserveExternalRequestId: false,
  via: '',
  forwardClientCert: false,
};

function request(remoteIp: string, headers: string[]): HttpRequest {
  return {
    method: 'GET',
    path: '/',
    authority: 'x',
    scheme: 'http',
    headers,
    protocol: 'HTTP/1.1',
    remoteIp,
    contentLength: 0,
    hasBody: false,
  };
}

/** The values of `name`, in order. */
function values(headers: readonly string[], name: string): string[] {
  const out: string[] = [];
  for (let i = 0; i < headers.length; i += 2) if (headers[i] === name) out.push(headers[i + 1] as string);
  return out;
}

/** Every control header a client might try, in both spellings. */
const CONTROL = [
  'retry-on',
  'retry-grpc-on',
  'max-retries',
  'retriable-status-codes',
  'upstream-rq-timeout-ms',
  'upstream-rq-per-try-timeout-ms',
  'upstream-rq-timeout-alt-response',
  'expected-rq-timeout-ms',
  'force-trace',
  'ip-tags',
  'upstream-alt-stat-name',
  'original-url',
  'hedge-on-per-try-timeout',
  'retriable-header-names',
];
const EDGE_ONLY = [
  'decorator-operation',
  'downstream-service-cluster',
  'downstream-service-node',
  'external-address',
];
const spoofed = (names: string[]) => names.flatMap((n) => [`x-envoy-${n}`, 'spoof', `x-proxy-${n}`, 'spoof']);

describe('applyEdge', () => {
  test('use_remote_address: an external peer is an edge request; control and caller headers go, the client is named', () => {
    const req = request('203.0.113.7', [
      'accept',
      '*/*',
      ...spoofed(CONTROL),
      ...spoofed(EDGE_ONLY),
      'x-envoy-internal',
      'true',
      'x-proxy-internal',
      'true',
      'x-request-id',
      'client-chosen',
      'x-forwarded-proto',
      'https',
    ]);
    const bits = applyEdge(req, { ...SPEC, useRemoteAddress: true }, '127.0.0.1');
    assert.equal(bits, EDGE_EXTERNAL);
    const names = req.headers.filter((_, i) => i % 2 === 0);
    assert.deepEqual(
      names.filter((n) => n.startsWith('x-envoy-') || n.startsWith('x-proxy-')),
      ['x-proxy-external-address'],
    );
    assert.deepEqual(values(req.headers, 'x-proxy-external-address'), ['203.0.113.7']);
    assert.deepEqual(values(req.headers, 'x-forwarded-for'), ['203.0.113.7']);
    assert.deepEqual(
      values(req.headers, 'x-forwarded-proto'),
      ['http'],
      'an untrusted peer does not say the scheme',
    );
    const [id] = values(req.headers, 'x-request-id');
    assert.notEqual(id, 'client-chosen', 'an edge regenerates x-request-id');
    assert.match(id ?? '', /^[0-9a-f]{8}-[0-9a-f]{4}-4/);
    assert.deepEqual(values(req.headers, 'accept'), ['*/*']);
  });

  test('preserve_external_request_id keeps an edge request id; generate_request_id false adds none', () => {
    const kept = request('203.0.113.7', ['x-request-id', 'client-chosen']);
    applyEdge(kept, { ...SPEC, useRemoteAddress: true, preserveExternalRequestId: true }, '127.0.0.1');
    assert.deepEqual(values(kept.headers, 'x-request-id'), ['client-chosen']);
    const none = request('203.0.113.7', []);
    applyEdge(none, { ...SPEC, useRemoteAddress: true, generateRequestId: false }, '127.0.0.1');
    assert.deepEqual(values(none.headers, 'x-request-id'), []);
  });

  test('use_remote_address: an internal peer without x-forwarded-for is internal and keeps its control headers', () => {
    const req = request('10.1.2.3', [
      'x-envoy-retry-on',
      '5xx',
      'x-request-id',
      'abc',
      'x-proxy-internal',
      'no',
    ]);
    const bits = applyEdge(req, { ...SPEC, useRemoteAddress: true }, '127.0.0.1');
    assert.equal(bits, EDGE_INTERNAL | EDGE_ROUTER_HEADERS);
    assert.deepEqual(values(req.headers, 'x-envoy-retry-on'), ['5xx']);
    assert.deepEqual(values(req.headers, 'x-proxy-internal'), ['true'], 'only the proxy says internal');
    assert.deepEqual(values(req.headers, 'x-request-id'), ['abc']);
    assert.deepEqual(values(req.headers, 'x-forwarded-for'), ['10.1.2.3']);
    assert.deepEqual(values(req.headers, 'x-proxy-external-address'), []);
  });

  test('use_remote_address: an internal peer relaying a longer x-forwarded-for is external (the list is not single)', () => {
    const req = request('10.1.2.3', ['x-forwarded-for', '10.9.9.9', 'x-envoy-retry-on', '5xx']);
    assert.equal(applyEdge(req, { ...SPEC, useRemoteAddress: true }, '127.0.0.1'), EDGE_EXTERNAL);
    assert.deepEqual(values(req.headers, 'x-forwarded-for'), ['10.9.9.9, 10.1.2.3']);
    assert.deepEqual(values(req.headers, 'x-envoy-retry-on'), []);
    assert.deepEqual(values(req.headers, 'x-proxy-external-address'), ['10.1.2.3']);
  });

  test('xff_num_trusted_hops with use_remote_address: the client is read past the trusted proxies; their scheme kept', () => {
    const req = request('10.0.0.2', [
      'x-forwarded-for',
      '198.51.100.1, 203.0.113.9',
      'x-forwarded-proto',
      'https',
    ]);
    applyEdge(req, { ...SPEC, useRemoteAddress: true, xffNumTrustedHops: 1 }, '127.0.0.1');
    assert.deepEqual(values(req.headers, 'x-proxy-external-address'), ['203.0.113.9']);
    assert.deepEqual(values(req.headers, 'x-forwarded-for'), ['198.51.100.1, 203.0.113.9, 10.0.0.2']);
    assert.deepEqual(values(req.headers, 'x-forwarded-proto'), ['https']);
    // Too short a list: the peer is the client.
    const short = request('10.0.0.2', []);
    applyEdge(short, { ...SPEC, useRemoteAddress: true, xffNumTrustedHops: 2 }, '127.0.0.1');
    assert.deepEqual(values(short.headers, 'x-proxy-internal'), ['true']);
  });

  test('skip_xff_append leaves x-forwarded-for; a loopback peer appends the local address', () => {
    const skipped = request('203.0.113.7', ['x-forwarded-for', '1.1.1.1']);
    applyEdge(skipped, { ...SPEC, useRemoteAddress: true, skipXffAppend: true }, '127.0.0.1');
    assert.deepEqual(values(skipped.headers, 'x-forwarded-for'), ['1.1.1.1']);
    const loop = request('127.0.0.5', ['x-forwarded-for', '1.1.1.1', 'x-forwarded-for', '2.2.2.2']);
    applyEdge(loop, { ...SPEC, useRemoteAddress: true }, '10.0.0.100');
    assert.deepEqual(values(loop.headers, 'x-forwarded-for'), ['1.1.1.1, 2.2.2.2, 10.0.0.100']);
  });

  test('without use_remote_address: x-forwarded-for names the client, nothing is appended, the scheme is trusted', () => {
    const internal = request('203.0.113.7', ['x-forwarded-for', '10.0.0.1', 'x-envoy-max-retries', '3']);
    assert.equal(applyEdge(internal, SPEC, '127.0.0.1'), EDGE_INTERNAL | EDGE_ROUTER_HEADERS);
    assert.deepEqual(values(internal.headers, 'x-forwarded-for'), ['10.0.0.1']);
    const hops = request('10.0.0.2', [
      'x-forwarded-for',
      '10.0.0.1, 203.0.113.4',
      'x-forwarded-proto',
      'https',
      'x-envoy-max-retries',
      '3',
      'x-envoy-downstream-service-cluster',
      'front',
      'x-request-id',
      'from-front',
    ]);
    assert.equal(applyEdge(hops, { ...SPEC, xffNumTrustedHops: 1 }, '127.0.0.1'), 0);
    assert.deepEqual(values(hops.headers, 'x-envoy-max-retries'), [], 'external: control headers go');
    assert.deepEqual(values(hops.headers, 'x-envoy-downstream-service-cluster'), ['front'], 'not an edge');
    assert.deepEqual(values(hops.headers, 'x-request-id'), ['from-front']);
    assert.deepEqual(values(hops.headers, 'x-forwarded-proto'), ['https']);
    // No x-forwarded-for at all: nobody vouches for the client, so it is not internal.
    const bare = request('127.0.0.1', ['x-proxy-force-trace', '1']);
    assert.equal(applyEdge(bare, SPEC, '127.0.0.1'), 0);
    assert.deepEqual(values(bare.headers, 'x-proxy-force-trace'), []);
  });

  test('internal_only_headers go from a request that is not internal', () => {
    const external = request('203.0.113.7', ['x-secret', 'forged', 'accept', '*/*']);
    applyEdge(external, { ...SPEC, useRemoteAddress: true }, '127.0.0.1', ['x-secret']);
    assert.deepEqual(values(external.headers, 'x-secret'), []);
    assert.deepEqual(values(external.headers, 'accept'), ['*/*']);
    const internal = request('10.0.0.1', ['x-secret', 'mesh']);
    applyEdge(internal, { ...SPEC, useRemoteAddress: true }, '127.0.0.1', ['x-secret']);
    assert.deepEqual(values(internal.headers, 'x-secret'), ['mesh']);
  });

  test('the access log’s client is the address x-forwarded-for named (port 0), else the peer’s', () => {
    const info = { downstreamRemote: '10.0.0.2:5555' };
    applyEdge(request('10.0.0.2', ['x-forwarded-for', '203.0.113.4']), SPEC, '127.0.0.1', [], info);
    assert.equal(info.downstreamRemote, '203.0.113.4:0');
    const v6 = { downstreamRemote: '10.0.0.2:5555' };
    const hops = { ...SPEC, useRemoteAddress: true, xffNumTrustedHops: 1 };
    applyEdge(request('10.0.0.2', ['x-forwarded-for', '2001:db8::7']), hops, '127.0.0.1', [], v6);
    assert.equal(v6.downstreamRemote, '[2001:db8::7]:0');
    const peer = { downstreamRemote: '10.0.0.2:5555' };
    applyEdge(
      request('10.0.0.2', ['x-forwarded-for', '203.0.113.4']),
      { ...SPEC, useRemoteAddress: true },
      '127.0.0.1',
      [],
      peer,
    );
    assert.equal(peer.downstreamRemote, '10.0.0.2:5555');
    const none = { downstreamRemote: '10.0.0.2:5555' };
    applyEdge(request('10.0.0.2', ['x-forwarded-for', 'unknown']), SPEC, '127.0.0.1', [], none);
    assert.equal(none.downstreamRemote, '10.0.0.2:5555');
  });

  test('x-forwarded-client-cert is removed (SANITIZE, the default) unless ALWAYS_FORWARD_ONLY', () => {
    const sanitized = request('10.0.0.1', ['x-forwarded-client-cert', 'By=spiffe://forged']);
    applyEdge(sanitized, { ...SPEC, useRemoteAddress: true }, '127.0.0.1');
    assert.deepEqual(values(sanitized.headers, 'x-forwarded-client-cert'), [], 'even from an internal peer');
    const kept = request('203.0.113.7', ['x-forwarded-client-cert', 'By=spiffe://front']);
    applyEdge(kept, { ...SPEC, forwardClientCert: true }, '127.0.0.1');
    assert.deepEqual(values(kept.headers, 'x-forwarded-client-cert'), ['By=spiffe://front']);
    assert.match(
      findingsOf((report) =>
        compileEdge({ forward_client_cert_details: 'APPEND_FORWARD' }, 'hcm', report),
      ).join(),
      /hcm\.forward_client_cert_details: forward_client_cert_details APPEND_FORWARD .* is not implemented/,
    );
    assert.deepEqual(
      findingsOf((report) =>
        compileEdge({ forward_client_cert_details: 'ALWAYS_FORWARD_ONLY' }, 'hcm', report),
      ),
      [],
    );
  });

  test('via over a real listener: on the request, the upstream response and the proxy’s own replies', async () => {
    const seenVia: string[] = [];
    const upstream = http.createServer((req, res) => {
      seenVia.push(String(req.headers.via));
      res.writeHead(200, { via: '1.1 origin' }).end();
    });
    await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
    const clusters = [
      {
        raw: { name: 'backend', connect_timeout: '1s' },
        addresses: [`127.0.0.1:${(upstream.address() as AddressInfo).port}`],
      },
    ];
    const local = [{ match: { prefix: '/local' }, direct_response: { status: 204 } }];
    const proxy = await startProxy({ ...hcmConfig('backend', local), via: 'front' }, clusters);
    try {
      const res = await fetch(`http://127.0.0.1:${proxy.port}/`, { headers: { via: '1.1 client' } });
      assert.deepEqual(seenVia, ['1.1 client, front']);
      assert.equal(res.headers.get('via'), '1.1 origin, front');
      assert.equal((await fetch(`http://127.0.0.1:${proxy.port}/local`)).headers.get('via'), 'front');
    } finally {
      await proxy.close();
      upstream.close();
    }
  });

  test('via is appended to the request', () => {
    const req = request('10.0.0.1', ['via', '1.1 other']);
    applyEdge(req, { ...SPEC, via: 'front' }, '127.0.0.1');
    assert.deepEqual(values(req.headers, 'via'), ['1.1 other, front']);
  });

  test('a request with no x- header is only added to', () => {
    const headers = ['accept', '*/*', 'user-agent', 'curl'];
    const req = request('10.0.0.1', headers);
    applyEdge(req, { ...SPEC, generateRequestId: false }, '127.0.0.1');
    assert.equal(req.headers, headers);
    assert.deepEqual(headers, ['accept', '*/*', 'user-agent', 'curl', 'x-forwarded-proto', 'http']);
  });
});

test('property: whatever headers a client sends, an external request keeps none of the control headers, an internal one all of them', () => {
  const controlNames = [...CONTROL, ...EDGE_ONLY, 'internal'].flatMap((n) => [
    `x-envoy-${n}`,
    `x-proxy-${n}`,
  ]);
  const name = fc.oneof(
    fc.constantFrom(
      ...controlNames,
      'x-forwarded-for',
      'x-forwarded-proto',
      'x-request-id',
      'x-forwarded-client-cert',
    ),
    fc.string({ unit: fc.constantFrom(...'abcx-yz'), minLength: 1, maxLength: 12 }),
  );
  const value = fc.oneof(
    fc.string({ maxLength: 20 }),
    fc.ipV4(),
    fc.ipV6(),
    fc.constant('10.0.0.1, 203.0.113.9'),
  );
  const peer = fc.oneof(fc.ipV4(), fc.ipV6(), fc.constantFrom('10.0.0.1', '127.0.0.1', '::1', ''));
  fc.assert(
    fc.property(
      fc.array(fc.tuple(name, value), { maxLength: 12 }),
      peer,
      fc.record({
        useRemoteAddress: fc.boolean(),
        xffNumTrustedHops: fc.nat(3),
        skipXffAppend: fc.boolean(),
      }),
      (pairs, ip, knobs) => {
        const req = request(ip, pairs.flat());
        const bits = applyEdge(req, { ...SPEC, ...knobs }, '127.0.0.1');
        const names = req.headers.filter((_, i) => i % 2 === 0);
        const internalMarks = names.filter((n) => n === 'x-envoy-internal' || n === 'x-proxy-internal');
        if (bits & EDGE_INTERNAL) {
          assert.deepEqual(internalMarks, ['x-proxy-internal']);
          for (const [n] of pairs)
            if (n.startsWith('x-') && CONTROL.some((c) => n.endsWith(`-${c}`)) && controlNames.includes(n))
              assert.ok(names.includes(n), `${n} kept for an internal request`);
        } else {
          assert.deepEqual(internalMarks, []);
          for (const n of names)
            if (controlNames.includes(n))
              assert.ok(
                !(bits & EDGE_EXTERNAL)
                  ? EDGE_ONLY.some((e) => n.endsWith(`-${e}`))
                  : n === 'x-proxy-external-address',
                `${n} survived an external request`,
              );
        }
        assert.equal(names.filter((n) => n === 'x-forwarded-client-cert').length, 0);
        assert.ok(names.filter((n) => n === 'x-request-id').length >= 1);
      },
    ),
    { seed: 2504, numRuns: RUNS * 3 },
  );
});

describe('the edge over real sockets', () => {
  let upstream: http.Server;
  const seen: http.IncomingHttpHeaders[] = [];
  let proxy: TestProxy;

  before(async () => {
    upstream = http.createServer((req, res) => {
      seen.push(req.headers);
      res.setHeader('x-route', req.url ?? '');
      res.end('ok');
    });
    await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
    const port = (upstream.address() as AddressInfo).port;
    const config = hcmConfig('backend', [
      // A route only an internal caller could pick, by a header a client might forge.
      {
        match: { prefix: '/internal-only', headers: [{ name: 'x-proxy-internal', exact_match: 'true' }] },
        direct_response: { status: 299, body: { inline_string: 'internal only' } },
      },
    ]);
    const routeConfig = { ...(config.route_config as object), internal_only_headers: ['X-Secret'] };
    proxy = await startProxy({ ...config, route_config: routeConfig, use_remote_address: true }, [
      { raw: { name: 'backend', connect_timeout: '1s' }, addresses: [`127.0.0.1:${port}`] },
    ]);
  });

  after(async () => {
    await proxy.close();
    upstream.close();
  });

  /** A GET from `from` (127.0.0.1 is internal, 127.0.0.2 is not, as the reference counts). */
  function get(
    from: string,
    path: string,
    headers: Record<string, string>,
  ): Promise<{ status: number; body: string }> {
    return new Promise((resolve, reject) => {
      const req = http.get(
        { host: '127.0.0.1', port: proxy.port, path, localAddress: from, headers, agent: false },
        (res) => {
          let body = '';
          res.on('data', (c) => {
            body += c;
          });
          res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
        },
      );
      req.setTimeout(5000, () => req.destroy(new Error('timed out')));
      req.on('error', reject);
    });
  }

  const forged = Object.fromEntries(
    [...CONTROL, ...EDGE_ONLY, 'internal'].flatMap((n) => [
      [`x-envoy-${n}`, n === 'internal' ? 'true' : '1'],
      [`x-proxy-${n}`, n === 'internal' ? 'true' : '1'],
    ]),
  );

  // Root cause: x-forwarded-proto was set from the request's scheme, which over HTTP/2 is the
  // client's `:scheme`: a plain h2c client saying `https` had the upstream told TLS was used,
  // on an edge too. The reference sets it from the connection (`connection.ssl()`).
  test("an HTTP/2 client's :scheme https on a plain connection: the upstream is told http", async () => {
    for (const scheme of ['https', 'http']) {
      const before = seen.length;
      const client = await rawH2(proxy.port);
      client.send(
        headersFrame(
          1,
          [
            [':method', 'GET'],
            [':scheme', scheme],
            [':authority', 'a'],
            [':path', `/${scheme}`],
          ],
          true,
        ),
      );
      await client.until((frames) => outcome(frames, 1) !== 'nothing', 5000);
      client.socket.destroy();
      assert.equal(seen.length, before + 1);
      assert.equal(seen.at(-1)?.['x-forwarded-proto'], 'http');
    }
  });

  test('an external client: no control header reaches the router or the upstream; the upstream learns the real client', async () => {
    const res = await get('127.0.0.2', '/internal-only', {
      ...forged,
      'x-request-id': 'client-chosen',
      'x-secret': 'forged',
    });
    assert.equal(res.status, 200, 'a forged x-proxy-internal does not pick the internal-only route');
    const h = seen.at(-1) ?? {};
    const control = Object.keys(h).filter((n) => n.startsWith('x-envoy-') || n.startsWith('x-proxy-'));
    // Only what this proxy sets: the client's address and the router's timeout (test/dataplane/router/request-controls.test.ts).
    assert.deepEqual(control, ['x-proxy-external-address', 'x-proxy-expected-rq-timeout-ms']);
    assert.equal(
      h['x-proxy-expected-rq-timeout-ms'],
      '15000',
      'the forged upstream-rq-timeout-ms did not act',
    );
    assert.equal(h['x-proxy-external-address'], '127.0.0.2');
    assert.equal(h['x-secret'], undefined, 'internal_only_headers');
    assert.notEqual(h['x-request-id'], 'client-chosen');
    assert.equal(h['x-forwarded-for'], '127.0.0.1', 'a loopback peer is forwarded as the local address');
  });

  test('an internal client is marked internal (routes can tell) and keeps its request id', async () => {
    assert.deepEqual(await get('127.0.0.1', '/internal-only', {}), { status: 299, body: 'internal only' });
    assert.equal(
      (await get('127.0.0.1', '/', { 'x-request-id': 'internal-id', 'x-secret': 'mesh' })).status,
      200,
    );
    const h = seen.at(-1) ?? {};
    assert.equal(h['x-proxy-internal'], 'true');
    assert.equal(h['x-request-id'], 'internal-id');
    assert.equal(h['x-secret'], 'mesh');
    assert.equal(h['x-proxy-external-address'], undefined);
  });
});

test('two workers serve the edge the same: an external client’s forged headers stop there, an internal one’s retry acts', async () => {
  let hits = 0;
  const seen: http.IncomingHttpHeaders[] = [];
  const upstream = http.createServer((req, res) => {
    hits += 1;
    seen.push(req.headers);
    res.writeHead(req.url === '/flaky' && hits % 2 === 1 ? 503 : 200).end();
  });
  await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
  const port = (upstream.address() as AddressInfo).port;
  const hcm = {
    ...hcmWithRoutes([{ match: { prefix: '/' }, route: { cluster: 'up' } }]),
    use_remote_address: true,
  };
  const proxy = await startProxyProcess(httpBootstrap([cluster('up', [port])], hcm), ['--concurrency', '2']);
  try {
    const listener = await proxy.listenerPort('http');
    const send = (from: string, path: string, headers: Record<string, string>) =>
      new Promise<number>((resolve, reject) => {
        const req = http.get(
          { host: '127.0.0.1', port: listener, path, localAddress: from, headers, agent: false },
          (res) => {
            res.resume();
            res.on('end', () => resolve(res.statusCode ?? 0));
          },
        );
        req.setTimeout(10_000, () => req.destroy(new Error('timed out')));
        req.on('error', reject);
      });
    for (let i = 0; i < 4; i++) {
      hits = 0;
      assert.equal(
        await send('127.0.0.2', '/flaky', { 'x-envoy-retry-on': '5xx', 'x-envoy-internal': 'true' }),
        503,
      );
      assert.equal(hits, 1, 'the external retry header did not act');
      assert.equal(seen.at(-1)?.['x-envoy-internal'], undefined);
      assert.equal(seen.at(-1)?.['x-proxy-external-address'], '127.0.0.2');
      hits = 0;
      assert.equal(await send('127.0.0.1', '/flaky', { 'x-envoy-retry-on': '5xx' }), 200);
      assert.equal(hits, 2, 'the internal one did');
    }
  } finally {
    await proxy.stop();
    upstream.close();
  }
});

describe('headers_with_underscores_action', () => {
  test('ALLOW keeps, DROP_HEADER drops and counts, REJECT_REQUEST rejects a name with _', () => {
    const headers = () => ['x_forwarded_user', 'admin', 'accept', '*/*', 'x_b', '1'];
    const allowed = headers();
    assert.equal(underscoreHeaders(allowed, 'ALLOW'), 0);
    assert.deepEqual(allowed, headers());
    const dropped = headers();
    assert.equal(underscoreHeaders(dropped, 'DROP_HEADER'), 2);
    assert.deepEqual(dropped, ['accept', '*/*']);
    assert.equal(underscoreHeaders(headers(), 'REJECT_REQUEST'), -1);
    assert.equal(underscoreHeaders(['accept', '*/*'], 'REJECT_REQUEST'), 0);
  });

  for (const action of ['REJECT_REQUEST', 'DROP_HEADER'] as const) {
    test(`${action} over real sockets, with its stat`, async () => {
      const seen: http.IncomingHttpHeaders[] = [];
      const upstream = http.createServer((req, res) => {
        seen.push(req.headers);
        res.end('ok');
      });
      await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
      const port = (upstream.address() as AddressInfo).port;
      const proxy = await startProxy(
        {
          ...hcmConfig('backend'),
          common_http_protocol_options: { headers_with_underscores_action: action },
        },
        [{ raw: { name: 'backend', connect_timeout: '1s' }, addresses: [`127.0.0.1:${port}`] }],
      );
      try {
        const res = await fetch(`http://127.0.0.1:${proxy.port}/`, {
          headers: { x_user: 'admin', 'x-ok': '1' },
        });
        await res.text();
        if (action === 'REJECT_REQUEST') {
          assert.equal(res.status, 400);
          assert.equal(seen.length, 0);
          assert.equal(proxy.counter('http.ingress.requests_rejected_with_underscores_in_headers'), 1);
        } else {
          assert.equal(res.status, 200);
          assert.equal(seen[0]?.x_user, undefined);
          assert.equal(seen[0]?.['x-ok'], '1');
          assert.equal(proxy.counter('http.ingress.dropped_headers_with_underscores'), 1);
        }
      } finally {
        await proxy.close();
        upstream.close();
      }
    });
  }
});
