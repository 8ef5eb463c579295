/**
 * What the per-request HTTP filters cost, in-process: each filter made by its factory from a
 * config that lets every request through, run by the chain's own iteration
 * (src/dataplane/http/filters/runner.ts) over one request head, one response head and a
 * response body, with no sockets, so the figure is the filters and the runner alone; "the
 * runner alone" is one filter with no callbacks. ext_authz and ratelimit call their service
 * for each request: the tests' own gRPC servers, in a child process (`peers/filter-services.ts`)
 * so their CPU is apart, reached through this build's upstream pools over HTTP/2 on loopback,
 * several requests in flight; their figure is the filter, the call's encoding, framing and
 * socket I/O on this side, and the answer's decoding. First of all, an HTTP/1.1 request
 * through a real connection manager's exchange with an empty chain (`BENCH_FILTERS=exchange`:
 * that row alone, for alternating runs of two builds). CPU from `process.cpuUsage`, the best
 * of BENCH_ROUNDS (default 5) rounds, as other load on the machine only adds. Run alone:
 * `npm run bench -- filters`. The Lua filter has its own part (`lua`).
 */
import type { JsonObject } from '../events/index.js';
import { compileTestHcm } from '../test/helpers/compile.js';
import { answeringRoutes, testCluster, testContext } from '../test/helpers/http-dataplane.js';
import { Report } from '../src/bootstrap/report.js';
import { newStreamInfo } from '../src/dataplane/access-log/stream-info.js';
import type { HttpRequest } from '../src/dataplane/codec/request.js';
import {
  CONTINUE,
  type HttpFilterFactory,
  type RouteHit,
  type StreamFilter,
  type StreamFilterMaker,
} from '../src/dataplane/http/filters/api.js';
import { compileCorsPolicy } from '../src/dataplane/http/cors.js';
import { corsFactory } from '../src/dataplane/http/filters/cors.js';
import { csrfFactory } from '../src/dataplane/http/filters/csrf.js';
import { extAuthzFactory } from '../src/dataplane/http/filters/ext-authz/index.js';
import { faultFactory } from '../src/dataplane/http/filters/fault/index.js';
import { rateLimitFactory } from '../src/dataplane/http/filters/ratelimit/index.js';
import {
  compileRateLimits,
  ROUTE_RATE_LIMITS,
  type RouteRateLimits,
} from '../src/dataplane/http/filters/ratelimit/route-policy.js';
import { grpcHttp1BridgeFactory, grpcWebFactory } from '../src/dataplane/http/filters/grpc/index.js';
import { rbacFactory } from '../src/dataplane/http/filters/rbac/index.js';
import { tapFactory } from '../src/dataplane/http/filters/tap.js';
import type { FilterChainEnds } from '../src/dataplane/http/filters/chain-ends.js';
import { FilterRunner } from '../src/dataplane/http/filters/runner.js';
import { Exchange, type ExchangeOwner } from '../src/dataplane/http/exchange.js';
import { HttpConnectionManager } from '../src/dataplane/http/manager.js';
import { StreamTimers } from '../src/dataplane/http/stream-timers.js';
import { TapRegistry } from '../src/dataplane/http/tap-registry.js';
import type { ResponseSink } from '../src/dataplane/codec/request.js';
import type { ClusterLookup } from '../src/dataplane/pool/cluster-traffic.js';
import { destroyPools } from '../src/dataplane/pool/index.js';
import { StatsStore } from '../src/stats/store.js';
import { spawnPeer } from './lib/processes.js';
import { announced, nodeScript } from './peers/start.js';
import type { BenchRow } from './types.js';

const REQUESTS = 50_000;
/** Requests of a round through a filter that calls a service, and how many are in flight at once. */
const CALLING_REQUESTS = 5_000;
const IN_FLIGHT = 8;
const ROUNDS = Math.max(1, Number(process.env.BENCH_ROUNDS ?? 5));

function request(method = 'GET', extra: string[] = []): HttpRequest {
  return {
    method,
    path: '/api/items?page=2',
    authority: 'example.com',
    scheme: 'http',
    headers: ['user-agent', 'bench/1.0', 'accept', '*/*', 'x-request-id', 'f0e1d2c3', ...extra],
    protocol: 'HTTP/1.1',
    remoteIp: '127.0.0.1',
    remotePort: 40000,
    localAddress: '127.0.0.1:10000',
    contentLength: 0,
    hasBody: false,
  };
}

/** A factory's filter maker from `config`, started as a connection manager starts it. */
function made(
  factory: HttpFilterFactory<never>,
  config: JsonObject,
  clusters: ClusterLookup = { get: () => undefined },
): StreamFilterMaker {
  const report = new Report('bench');
  const compiled = factory.compile(config, 'bench', report);
  if (report.problems.length > 0) throw new Error(report.problems.map((p) => p.message).join('; '));
  const make = factory.start?.(
    compiled as never,
    {
      scope: new StatsStore().scope('http.bench.'),
      runtime: () => undefined,
      log: () => {
        throw new Error('no logging in the bench');
      },
      clusters,
      localCluster: 'bench',
      taps: BENCH_TAPS,
      onClose: () => {},
    } as never,
  );
  if (make === undefined) throw new Error(`${factory.name} starts no filter`);
  return make;
}

/** A `/tap` session attached to the bench's tap filter, matching every request, its traces dropped. */
const BENCH_TAPS = new TapRegistry();
BENCH_TAPS.sessions.set('bench', {
  match: () => true,
  maxRxBytes: 1024,
  maxTxBytes: 1024,
  bodyAsString: false,
  emit: () => {},
});

/** A route to a cluster whose virtual host allows the bench's origin (the CORS filter's policy). */
const CORS_ROUTE: RouteHit = {
  vh: {
    cors: compileCorsPolicy(
      { allow_origin_string_match: [{ exact: 'http://app.example' }], expose_headers: 'x-total' },
      'bench',
      new Report('bench'),
    ),
    csrf: null,
    perFilter: null,
  },
  route: { cors: null, csrf: null, perFilter: null, action: { kind: 'cluster' }, name: '' },
};

/** A measured chain: its filters, and the request (and route) it sees when not the plain GET. */
interface Chain {
  makers: () => StreamFilterMaker[];
  request?: () => HttpRequest;
  hit?: RouteHit;
}

/** The chains measured, by label; each lets every request through. */
const CHAINS: Record<string, Chain> = {
  'the harness alone (a request and its record, no chain)': { makers: () => [] },
  'the runner alone (one filter, no callbacks)': {
    makers: () => [() => ({ decodeHeaders: () => CONTINUE })],
  },
  'tap, a session attached that matches every request': {
    makers: () => [
      made(tapFactory as HttpFilterFactory<never>, {
        common_config: { admin_config: { config_id: 'bench' } },
      }),
    ],
  },
  'cors, an allowed origin (its response marked)': {
    makers: () => [made(corsFactory as HttpFilterFactory<never>, {})],
    request: () => request('GET', ['origin', 'http://app.example']),
    hit: CORS_ROUTE,
  },
  'csrf, a POST from its own origin': {
    makers: () => [
      made(csrfFactory as HttpFilterFactory<never>, {
        filter_enabled: { default_value: { numerator: 100 } },
      }),
    ],
    request: () => request('POST', ['origin', 'http://example.com']),
  },
  'grpc_web, a binary gRPC-Web call': {
    makers: () => [made(grpcWebFactory as HttpFilterFactory<never>, {})],
    request: () => request('POST', ['content-type', 'application/grpc-web']),
  },
  'grpc_http1_bridge, a gRPC call over HTTP/1.1 (its response held to its end)': {
    makers: () => [made(grpcHttp1BridgeFactory as HttpFilterFactory<never>, {})],
    request: () => request('POST', ['content-type', 'application/grpc']),
  },
  'fault (0% delay and abort)': {
    makers: () => [
      made(faultFactory as HttpFilterFactory<never>, {
        delay: { fixed_delay: '1s', percentage: { numerator: 0 } },
        abort: { http_status: 503, percentage: { numerator: 0 } },
      }),
    ],
  },
  'rbac (one allow-all policy, one shadow deny)': {
    makers: () => [
      made(rbacFactory as HttpFilterFactory<never>, {
        rules: {
          action: 'ALLOW',
          policies: { all: { permissions: [{ any: true }], principals: [{ any: true }] } },
        },
        shadow_rules: {
          action: 'DENY',
          policies: {
            admin: {
              permissions: [{ url_path: { path: { prefix: '/admin' } } }],
              principals: [{ any: true }],
            },
          },
        },
      }),
    ],
  },
};

const CHAIN_COUNT = Object.keys(CHAINS).length;

const BODY = Buffer.from('{"items":[1,2,3],"page":2}');
const NO_PER_ROUTE: ReadonlyMap<string, unknown> = new Map();

/** Chain ends that take everything and answer nothing, as an exchange would minus the sockets. */
function ends(
  perRoute: ReadonlyMap<string, unknown> = NO_PER_ROUTE,
  routed = () => {},
  req = request(),
  hit: RouteHit | null = null,
): FilterChainEnds {
  return {
    req,
    info: newStreamInfo(req, '127.0.0.1:40000', '127.0.0.1:10000'),
    ended: false,
    router: {
      hit,
      routeCluster: 'web',
      perRoute: (type) => perRoute.get(type),
      clearRouteCache: () => {},
      decodeHeaders: routed,
      decodeData: () => {},
      decodeTrailers: () => {},
    },
    bufferLimit: 1024 * 1024,
    responseLength: -1,
    sendLocalReply: () => {
      throw new Error('a filter answered a request the bench meant to pass');
    },
    encodedHeaders: () => {},
    encodedData: () => {},
    encodedTrailers: () => {},
    decodeWatermark: () => {},
    encodeWatermark: () => {},
    decodeTooLarge: () => {},
    encodeTooLarge: () => {},
  };
}

/** One request through the chain: request head, response head, response body, end. */
function exchange(makers: StreamFilterMaker[], chain: Chain): void {
  const req = chain.request?.() ?? request();
  // No filters: the harness alone (the request and its record), subtracted from the others.
  if (makers.length === 0) {
    ends(NO_PER_ROUTE, undefined, req);
    return;
  }
  const runner = new FilterRunner(
    makers.map((make) => make() as StreamFilter),
    ends(NO_PER_ROUTE, undefined, req, chain.hit ?? null),
  );
  runner.decodeHeaders();
  runner.encodeHeaders(200, ['content-type', 'application/json']);
  runner.encodeData(BODY, true);
  runner.destroy();
}

/** CPU µs per request of a chain, the best of the rounds. */
function measure(chain: Chain): { best: number; all: number[] } {
  const makers = chain.makers();
  return measureOnce(() => exchange(makers, chain));
}

/** One request through a chain whose filter calls a service: the rest waits for the router. */
async function call(makers: StreamFilterMaker[], perRoute: ReadonlyMap<string, unknown>): Promise<void> {
  let routed = () => {};
  const reached = new Promise<void>((resolve) => {
    routed = resolve;
  });
  const runner = new FilterRunner(
    makers.map((make) => make() as StreamFilter),
    ends(perRoute, routed),
  );
  runner.decodeHeaders();
  await reached;
  runner.encodeHeaders(200, ['content-type', 'application/json']);
  runner.encodeData(BODY, true);
  runner.destroy();
}

/** `count` calls, IN_FLIGHT at a time. */
async function calls(count: number, makers: StreamFilterMaker[], perRoute: ReadonlyMap<string, unknown>) {
  let left = count;
  const loop = async () => {
    while (left-- > 0) await call(makers, perRoute);
  };
  await Promise.all(Array.from({ length: IN_FLIGHT }, loop));
}

/** CPU µs per request of a chain that calls a service, the best of the rounds. */
async function measureCalls(
  makers: StreamFilterMaker[],
  perRoute: ReadonlyMap<string, unknown>,
): Promise<{ best: number; all: number[] }> {
  await calls(1000, makers, perRoute);
  const all: number[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    const cpu = process.cpuUsage();
    await calls(CALLING_REQUESTS, makers, perRoute);
    const used = process.cpuUsage(cpu);
    all.push((used.user + used.system) / CALLING_REQUESTS);
  }
  return { best: Math.min(...all), all };
}

/** The service-calling filters, measured against the services of `peers/filter-services.ts`. */
async function measureServiceFilters(): Promise<Array<{ label: string; best: number; all: number[] }>> {
  const peer = spawnPeer('filter services', ...nodeScript('filter-services', []));
  try {
    const ports = (await announced(peer, /listening (\d+ \d+)/, 60_000)).split(' ').map(Number);
    const ctx = testContext();
    const h2 = { connect_timeout: '1s', http2_protocol_options: {} };
    const authz = testCluster(ctx, { name: 'authz', ...h2 }, [`127.0.0.1:${ports[0]}`]);
    const rls = testCluster(ctx, { name: 'rls', ...h2 }, [`127.0.0.1:${ports[1]}`]);
    const clusters: ClusterLookup = {
      get: (name) => (name === 'authz' ? authz : name === 'rls' ? rls : undefined),
    };
    const report = new Report('bench');
    const limits: RouteRateLimits = {
      policies: compileRateLimits(
        [{ actions: [{ generic_key: { descriptor_value: 'bench' } }] }],
        'bench',
        report,
      ),
      includeVh: false,
    };
    const results = [
      {
        label: 'ext_authz (gRPC authorizer allowing every request)',
        ...(await measureCalls(
          [
            made(
              extAuthzFactory as HttpFilterFactory<never>,
              {
                grpc_service: { envoy_grpc: { cluster_name: 'authz' }, timeout: '10s' },
                transport_api_version: 'V3',
              },
              clusters,
            ),
          ],
          NO_PER_ROUTE,
        )),
      },
      {
        label: 'ratelimit (one generic_key descriptor, service answers OK)',
        ...(await measureCalls(
          [
            made(
              rateLimitFactory as HttpFilterFactory<never>,
              {
                domain: 'bench',
                timeout: '10s',
                rate_limit_service: {
                  grpc_service: { envoy_grpc: { cluster_name: 'rls' } },
                  transport_api_version: 'V3',
                },
              },
              clusters,
            ),
          ],
          new Map([[ROUTE_RATE_LIMITS, limits]]),
        )),
      },
    ];
    destroyPools(authz);
    destroyPools(rls);
    return results;
  } finally {
    await peer.stop();
  }
}

/** A downstream that takes every byte and is never full: the codec's side without a socket. */
const SINK: ResponseSink = {
  headersSent: false,
  writeHead: () => {},
  writeData: () => true,
  end: () => {},
  reset: () => {},
};

/**
 * An HTTP/1.1 request through the exchange (src/dataplane/http/exchange.ts) of a connection
 * manager whose chain is the router alone, without sockets: one request answered by a
 * `direct_response` route (head checks, edge, routing, the proxy's own reply, the request's
 * record and access log), and one upstream response's head, body and end on its way back.
 * This is the per-request path issue 29 must not make dearer.
 */
function emptyChainExchange(): () => void {
  const hcm = new HttpConnectionManager(
    compileTestHcm({
      stat_prefix: 'bench',
      route_config: answeringRoutes('ok'),
      http_filters: [{ name: 'envoy.filters.http.router' }],
    }),
    { ctx: testContext(), clusters: { get: () => undefined }, listenerName: 'bench' },
  );
  const owner: ExchangeOwner = {
    timers: new StreamTimers(),
    onExchangeDone: () => {},
    pauseReading: () => {},
    resumeReading: () => {},
  };
  const responseHead = ['content-type', 'application/json', 'date', 'Sat, 28 Nov 2026 12:00:00 GMT'];
  return () => {
    new Exchange(hcm, request(), SINK, owner).start();
    const proxied = new Exchange(hcm, request(), SINK, owner);
    proxied.upstreamHead(200, responseHead.slice(), BODY.length);
    proxied.upstreamData(BODY);
    proxied.upstreamEnd();
  };
}

/** CPU µs per request of `once`, the best of the rounds. */
function measureOnce(once: () => void): { best: number; all: number[] } {
  for (let i = 0; i < 5000; i++) once();
  const all: number[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    const cpu = process.cpuUsage();
    for (let i = 0; i < REQUESTS; i++) once();
    const used = process.cpuUsage(cpu);
    all.push((used.user + used.system) / REQUESTS);
  }
  return { best: Math.min(...all), all };
}

/** The filters part of `npm run bench`. */
export async function benchFilters(): Promise<BenchRow[]> {
  // First, so that an A/B of two builds runs the same code before it (the rows below differ).
  const exchange = {
    name: 'filters: the exchange with an empty chain (a direct response, and an upstream response), per request pair',
    ...measureOnce(emptyChainExchange()),
  };
  const exchangeRow: BenchRow = {
    name: exchange.name,
    value: Number(exchange.best.toPrecision(3)),
    unit: 'µs CPU',
    note: `${REQUESTS.toLocaleString('en-US')} pairs in-process per round, no sockets; rounds: ${exchange.all.map((u) => u.toFixed(2)).join(', ')}`,
  };
  // `BENCH_FILTERS=exchange`: that row alone, for alternating runs of two builds.
  if (process.env.BENCH_FILTERS === 'exchange') return [exchangeRow];
  const results = [
    ...Object.entries(CHAINS).map(([label, chain]) => ({ label, ...measure(chain) })),
    ...(await measureServiceFilters()),
  ];
  const harness = results[0]?.best ?? 0;
  const runner = results[1]?.best ?? 0;
  const rows = results.map((r, i) => ({
    name: `filters: ${r.label}, per request`,
    value: Number(r.best.toPrecision(3)),
    unit: 'µs CPU',
    note: [
      i === 0
        ? 'what every other row includes'
        : i === 1
          ? `${(r.best - harness).toFixed(2)} µs for the chain iteration`
          : `${(r.best - runner).toFixed(2)} µs over the runner alone`,
      `${(i < CHAIN_COUNT ? REQUESTS : CALLING_REQUESTS).toLocaleString('en-US')} requests in-process per round${i < CHAIN_COUNT ? '' : `, ${IN_FLIGHT} in flight, the service in a child process`}; rounds: ${r.all.map((u) => u.toFixed(2)).join(', ')}`,
    ].join('; '),
  }));
  return [exchangeRow, ...rows];
}
