/**
 * The ratelimit filter over real sockets, against a real gRPC rate limit service
 * (`@grpc/grpc-js`, `RateLimitService/ShouldRateLimit` v2 and v3) the test starts: the
 * descriptors each route action makes, stages, `include_vh_rate_limits`, 429 with
 * `x-proxy-ratelimited`, the `RL` and `RLSE` flags, stats, a failing service with and without
 * `failure_mode_deny`, a service answering garbage, and the refused fields by name.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync } from 'node:fs';
import type * as http2 from 'node:http2';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import fc from 'fast-check';
import { Report } from '../../../../../src/bootstrap/report.js';
import { flushAccessLogs } from '../../../../../src/dataplane/access-log/file-sink.js';
import { rateLimitFactory } from '../../../../../src/dataplane/http/filters/ratelimit/index.js';
import { compileRouteTable } from '../../../../../src/dataplane/router/table.js';
import {
  grpcAnswer,
  grpcFrame,
  helloUpstream,
  type Message,
  rawH2Server,
  unaryServer,
} from '../../../../helpers/authz-servers.js';
import { fileAccessLog } from '../../../../helpers/bootstraps.js';
import { startProxy, type TestProxy } from '../../../../helpers/http-dataplane.js';
import { send } from '../../../../helpers/http-send.js';

/** Fast-check runs of the answer fuzz. */
const RUNS = Number(process.env.FUZZ_RUNS ?? 100);

const PATHS = [
  '/envoy.service.ratelimit.v2.RateLimitService/ShouldRateLimit',
  '/envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit',
];
const TYPES = [
  'envoy.service.ratelimit.v2.RateLimitRequest',
  'envoy.service.ratelimit.v2.RateLimitResponse',
] as const;

/** Descriptors as `key=value,key=value` strings, for comparing. */
function flat(request: Message): string[] {
  return request.descriptors.map((d: Message) =>
    d.entries.map((e: Message) => `${e.key}=${e.value}`).join(','),
  );
}

/** Over the limit for `generic_key=limited` and `user=greedy`; otherwise OK, adding a request header. */
function decide(request: Message): Message {
  const over = flat(request).some((d) => d.includes('generic_key=limited') || d.includes('user=greedy'));
  if (flat(request).some((d) => d.startsWith('user=José ☃,')))
    return { overall_code: 'OK', request_headers_to_add: [{ key: 'x-current-user', value: 'Zoë €' }] };
  return over
    ? {
        overall_code: 'OVER_LIMIT',
        headers: [{ key: 'x-rl-reason', value: 'too many' }],
        statuses: [
          {
            code: 'OVER_LIMIT',
            current_limit: { requests_per_unit: 5, unit: 'SECOND' },
            limit_remaining: 0,
            duration_until_reset: { seconds: 1 },
          },
        ],
      }
    : {
        overall_code: 'OK',
        request_headers_to_add: [{ key: 'x-current-user', value: 'checked' }],
        statuses: [
          {
            code: 'OK',
            current_limit: { requests_per_unit: 10, unit: 'MINUTE', name: 'per-user' },
            limit_remaining: 7,
            duration_until_reset: { seconds: 30 },
          },
          {
            code: 'OK',
            current_limit: { requests_per_unit: 1000, unit: 'HOUR' },
            limit_remaining: 900,
            duration_until_reset: { seconds: 1800 },
          },
        ],
      };
}

const logPath = join(mkdtempSync(join(tmpdir(), 'ratelimit-')), 'access.log');

function hcm(filter: Record<string, unknown>): Record<string, unknown> {
  return {
    stat_prefix: 'ingress',
    access_log: [fileAccessLog(logPath, '%REQ(:PATH)% %RESPONSE_CODE% %RESPONSE_FLAGS%\n')],
    route_config: {
      virtual_hosts: [
        {
          name: 'all',
          domains: ['*'],
          rate_limits: [
            { actions: [{ remote_address: {} }] },
            { stage: 1, actions: [{ generic_key: { descriptor_value: 'stage1' } }] },
          ],
          routes: [
            {
              match: { prefix: '/limited' },
              route: {
                cluster: 'backend',
                rate_limits: [{ actions: [{ generic_key: { descriptor_value: 'limited' } }] }],
              },
            },
            {
              match: { prefix: '/user' },
              route: {
                cluster: 'backend',
                include_vh_rate_limits: true,
                rate_limits: [
                  {
                    actions: [
                      { request_headers: { header_name: 'x-user', descriptor_key: 'user' } },
                      { destination_cluster: {} },
                    ],
                  },
                ],
              },
            },
            {
              match: { prefix: '/match' },
              route: {
                cluster: 'backend',
                rate_limits: [
                  {
                    actions: [
                      { source_cluster: {} },
                      {
                        header_value_match: {
                          descriptor_value: 'has-foo',
                          headers: [{ name: 'x-foo', present_match: true }],
                        },
                      },
                    ],
                  },
                ],
              },
            },
            { match: { prefix: '/' }, route: { cluster: 'backend' } },
          ],
        },
      ],
    },
    http_filters: [
      {
        name: 'envoy.filters.http.ratelimit',
        typed_config: {
          '@type': 'type.googleapis.com/envoy.extensions.filters.http.ratelimit.v3.RateLimit',
          ...filter,
        },
      },
      { name: 'envoy.filters.http.router' },
    ],
  };
}

let upstream: Awaited<ReturnType<typeof helloUpstream>>;
let rls: Awaited<ReturnType<typeof unaryServer>>;

before(async () => {
  upstream = await helloUpstream();
  rls = await unaryServer(PATHS, ...TYPES, decide);
});

after(() => {
  upstream.close();
  rls.close();
});

function proxyTo(port: number, filter: Record<string, unknown>): Promise<TestProxy> {
  return startProxy(hcm(filter), [
    { raw: { name: 'backend', connect_timeout: '1s' }, addresses: [`127.0.0.1:${upstream.port}`] },
    {
      raw: { name: 'rls', connect_timeout: '1s', http2_protocol_options: {} },
      addresses: [`127.0.0.1:${port}`],
    },
  ]);
}

/** The service config of a test: a timeout that a loaded machine cannot pass. */
const SERVICE = {
  domain: 'edge',
  timeout: '10s',
  rate_limit_service: { grpc_service: { envoy_grpc: { cluster_name: 'rls' } }, transport_api_version: 'V3' },
};

describe('ratelimit with a gRPC rate limit service', () => {
  let proxy: TestProxy;
  before(async () => {
    proxy = await proxyTo(rls.port, SERVICE);
  });
  after(() => proxy.close());

  it('answers 429 with x-proxy-ratelimited and the flag RL when over the limit', async () => {
    const before = upstream.seen.length;
    const res = await send(proxy.port, 'GET', '/limited');
    assert.equal(res.status, 429);
    assert.equal(res.headers['x-proxy-ratelimited'], 'true');
    assert.equal(res.headers['x-rl-reason'], 'too many');
    assert.equal(upstream.seen.length, before);
    const seen = rls.seen.at(-1);
    assert.equal(seen?.path, PATHS[1]);
    assert.equal(seen?.request.domain, 'edge');
    assert.deepEqual(flat(seen?.request ?? {}), ['generic_key=limited']);
    flushAccessLogs();
    assert.ok(readFileSync(logPath, 'utf8').split('\n').includes('/limited 429 RL'));
    assert.equal(proxy.counter('cluster.backend.ratelimit.over_limit'), 1);
  });

  it("sends the route's descriptors and, with include_vh_rate_limits, its virtual host's of the same stage", async () => {
    const res = await send(proxy.port, 'GET', '/user', { 'x-user': 'alice' });
    assert.equal(res.status, 200);
    assert.equal(res.body, 'Hello checked from behind Envoy!', 'request_headers_to_add reached the upstream');
    assert.deepEqual(flat(rls.seen.at(-1)?.request ?? {}), [
      'user=alice,destination_cluster=backend',
      'remote_address=127.0.0.1',
    ]);
    assert.equal((await send(proxy.port, 'GET', '/user', { 'x-user': 'greedy' })).status, 429);
    assert.ok(proxy.counter('cluster.backend.ratelimit.ok') >= 1);
  });

  // Root cause: head values are held a character a byte and descriptors are protobuf text, so
  // `José` went to the service as `JosÃ©` and its `€` came back as the byte 0xAC (head-text.ts).
  it('a descriptor from a header carries its UTF-8 as text; text the service adds reaches the upstream as UTF-8', async () => {
    const utf8 = (text: string) => Buffer.from(text, 'utf8').toString('latin1');
    const res = await send(proxy.port, 'GET', '/user', { 'x-user': utf8('José ☃') });
    assert.equal(res.status, 200);
    assert.equal(flat(rls.seen.at(-1)?.request ?? {})[0], 'user=José ☃,destination_cluster=backend');
    // The upstream echoes the field's bytes, which the client reads back as UTF-8.
    assert.equal(res.body, `Hello ${utf8('Zoë €')} from behind Envoy!`);
  });

  it('drops a descriptor whose header is missing or whose match fails; no descriptor, no call', async () => {
    const calls = rls.seen.length;
    assert.equal((await send(proxy.port, 'GET', '/')).status, 200);
    assert.equal((await send(proxy.port, 'GET', '/match')).status, 200);
    assert.equal(rls.seen.length, calls, 'nothing to ask');
    assert.equal((await send(proxy.port, 'GET', '/user')).status, 200);
    assert.deepEqual(flat(rls.seen.at(-1)?.request ?? {}), ['remote_address=127.0.0.1']);
    assert.equal((await send(proxy.port, 'GET', '/match', { 'x-foo': '1' })).status, 200);
    assert.deepEqual(flat(rls.seen.at(-1)?.request ?? {}), ['source_cluster=,header_match=has-foo']);
  });
});

describe('ratelimit rate_limited_as_resource_exhausted and enable_x_ratelimit_headers', () => {
  let proxy: TestProxy;
  before(async () => {
    proxy = await proxyTo(rls.port, {
      ...SERVICE,
      rate_limited_as_resource_exhausted: true,
      enable_x_ratelimit_headers: 'DRAFT_VERSION_03',
    });
  });

  it("adds the draft RateLimit headers of the service's statuses to the 200 and the 429, as the reference builds them", async () => {
    const ok = await send(proxy.port, 'GET', '/user', { 'x-user': 'alice' });
    assert.equal(ok.status, 200);
    assert.equal(ok.headers['x-ratelimit-limit'], '10, 10;w=60;name="per-user", 1000;w=3600');
    assert.equal(ok.headers['x-ratelimit-remaining'], '7');
    assert.equal(ok.headers['x-ratelimit-reset'], '30');
    const limited = await send(proxy.port, 'GET', '/limited');
    assert.equal(limited.status, 429);
    assert.equal(limited.headers['x-ratelimit-limit'], '5, 5;w=1');
    assert.equal(limited.headers['x-ratelimit-remaining'], '0');
    assert.equal(limited.headers['x-ratelimit-reset'], '1');
  });

  after(() => proxy.close());

  it('answers a limited gRPC request RESOURCE_EXHAUSTED (8) instead of UNAVAILABLE; others still get 429', async () => {
    const grpc = await send(proxy.port, 'POST', '/limited', { 'content-type': 'application/grpc' });
    assert.equal(grpc.status, 200);
    assert.equal(grpc.headers['grpc-status'], '8');
    assert.equal(grpc.headers['x-rl-reason'], 'too many');
    assert.equal((await send(proxy.port, 'GET', '/limited')).status, 429);
  });
});

describe('ratelimit request_type', () => {
  it('internal: only requests the edge step found internal (x-forwarded-for a private address) are asked about', async () => {
    const proxy = await proxyTo(rls.port, { ...SERVICE, request_type: 'internal' });
    try {
      const calls = rls.seen.length;
      assert.equal((await send(proxy.port, 'GET', '/limited')).status, 200);
      assert.equal(rls.seen.length, calls, 'an external request is not asked about');
      assert.equal(
        (await send(proxy.port, 'GET', '/limited', { 'x-forwarded-for': '10.0.0.1' })).status,
        429,
      );
    } finally {
      await proxy.close();
    }
    const external = await proxyTo(rls.port, { ...SERVICE, request_type: 'external' });
    try {
      assert.equal((await send(external.port, 'GET', '/limited')).status, 429);
      assert.equal(
        (await send(external.port, 'GET', '/limited', { 'x-forwarded-for': '10.0.0.1' })).status,
        200,
      );
    } finally {
      await external.close();
    }
  });
});

describe('ratelimit when the service fails', () => {
  let behaviour: (stream: http2.ServerHttp2Stream) => void = (s) => s.close(2);
  let broken: Awaited<ReturnType<typeof rawH2Server>>;
  let allowing: TestProxy;
  let denying: TestProxy;
  before(async () => {
    broken = await rawH2Server((stream) => behaviour(stream));
    allowing = await proxyTo(broken.port, SERVICE);
    denying = await proxyTo(broken.port, { ...SERVICE, failure_mode_deny: true });
  });
  after(async () => {
    await allowing.close();
    await denying.close();
    broken.close();
  });

  const garbage = (body: Buffer) => grpcAnswer(body);
  const cases: Record<string, (stream: http2.ServerHttp2Stream) => void> = {
    'a reset stream': (s) => s.close(2),
    'a closed connection': (s) => s.session?.destroy(),
    'bytes that are no message': garbage(Buffer.from([0, 0, 0, 0, 3, 0xff, 0xff, 0xff])),
    'an UNKNOWN overall code (an empty message)': garbage(Buffer.from([0, 0, 0, 0, 0])),
    'an HTTP 503': (s) => {
      s.respond({ ':status': 503 });
      s.end();
    },
  };
  for (const [name, misbehave] of Object.entries(cases)) {
    it(`${name}: passed through (failure_mode_allowed), or 500 RLSE with failure_mode_deny`, async () => {
      behaviour = misbehave;
      const allowed = allowing.counter('cluster.backend.ratelimit.failure_mode_allowed');
      assert.equal((await send(allowing.port, 'GET', '/limited')).status, 200);
      assert.equal(allowing.counter('cluster.backend.ratelimit.failure_mode_allowed'), allowed + 1);
      const errors = denying.counter('cluster.backend.ratelimit.error');
      assert.equal((await send(denying.port, 'GET', '/limited')).status, 500);
      assert.equal(denying.counter('cluster.backend.ratelimit.error'), errors + 1);
      flushAccessLogs();
      assert.ok(readFileSync(logPath, 'utf8').split('\n').includes('/limited 500 RLSE'));
    });
  }

  it('random answers (bytes, framing, grpc-status) never crash it: 200, 429 or, denying, 500', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.uint8Array({ maxLength: 48 }),
        fc.boolean(),
        fc.constantFrom('0', '8', 'x', ''),
        async (bytes, framed, status) => {
          behaviour = grpcAnswer(
            framed ? grpcFrame(Buffer.from(bytes)) : Buffer.from(bytes),
            status === '' ? {} : { 'grpc-status': status },
          );
          assert.ok([200, 429].includes((await send(allowing.port, 'GET', '/limited')).status));
          assert.ok([200, 429, 500].includes((await send(denying.port, 'GET', '/limited')).status));
        },
      ),
      { seed: 29, numRuns: RUNS },
    );
    behaviour = grpcAnswer(grpcFrame(Buffer.from([8, 1])));
    assert.equal(
      (await send(denying.port, 'GET', '/limited')).status,
      200,
      'overall_code OK after the storm',
    );
  });
});

describe('ratelimit compile', () => {
  it('refuses the unimplemented fields by name, and a filter without domain or service', () => {
    const report = new Report('t');
    rateLimitFactory.compile({ domain: 'd', rate_limit_service: {}, bogus: 1 } as never, 'f', report);
    rateLimitFactory.compile({ request_type: 'sometimes' } as never, 'g', report);
    assert.deepEqual(report.problems.map((p) => p.path).sort(), [
      'f.bogus',
      'f.rate_limit_service.grpc_service.envoy_grpc.cluster_name',
      'g.domain',
      'g.rate_limit_service',
      'g.rate_limit_service.grpc_service.envoy_grpc.cluster_name',
      'g.request_type',
    ]);
  });

  it("compiles a route's and a virtual host's rate_limits, refusing disable_key and malformed actions", () => {
    const report = new Report('t');
    compileRouteTable(
      {
        virtual_hosts: [
          {
            name: 'v',
            domains: ['*'],
            rate_limits: [{ disable_key: 'k', actions: [{ generic_key: { descriptor_value: 'x' } }] }],
            routes: [
              {
                match: { prefix: '/' },
                route: {
                  cluster: 'c',
                  rate_limits: [
                    { stage: 11, actions: [{ request_headers: { header_name: 'a' } }, {}] },
                    { actions: [] },
                  ],
                },
              },
            ],
          },
        ],
      },
      'rc',
      report,
    );
    assert.deepEqual(report.problems.map((p) => p.path).sort(), [
      'rc.virtual_hosts[0].rate_limits[0].disable_key',
      'rc.virtual_hosts[0].routes[0].route.rate_limits[0].actions[0].request_headers.descriptor_key',
      'rc.virtual_hosts[0].routes[0].route.rate_limits[0].actions[1]',
      'rc.virtual_hosts[0].routes[0].route.rate_limits[0].stage',
      'rc.virtual_hosts[0].routes[0].route.rate_limits[1].actions',
    ]);
  });
});
