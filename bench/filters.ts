/**
 * What the per-request HTTP filters cost, in-process: each filter made by its factory from a
 * config that lets every request through, run by the chain's own iteration
 * (src/dataplane/http/filters/runner.ts) over one request head, one response head and a
 * response body, with no sockets, so the figure is the filters and the runner alone; "the
 * runner alone" is one filter with no callbacks. CPU from `process.cpuUsage`, the best of
 * BENCH_ROUNDS (default 5) rounds, as other load on the machine only adds. Run alone:
 * `npm run bench -- filters`. The Lua filter has its own part (`lua`).
 */
import type { JsonObject } from '../events/index.js';
import { Report } from '../src/bootstrap/report.js';
import { newStreamInfo } from '../src/dataplane/access-log/stream-info.js';
import type { HttpRequest } from '../src/dataplane/codec/request.js';
import { CONTINUE, type StreamFilter, type StreamFilterMaker } from '../src/dataplane/http/filters/api.js';
import { faultFactory } from '../src/dataplane/http/filters/fault/index.js';
import { rbacFactory } from '../src/dataplane/http/filters/rbac/index.js';
import { type FilterChainEnds, FilterRunner } from '../src/dataplane/http/filters/runner.js';
import { StatsStore } from '../src/stats/store.js';
import type { BenchRow } from './types.js';

const REQUESTS = 50_000;
const ROUNDS = Math.max(1, Number(process.env.BENCH_ROUNDS ?? 5));

function request(): HttpRequest {
  return {
    method: 'GET',
    path: '/api/items?page=2',
    authority: 'example.com',
    scheme: 'http',
    headers: ['user-agent', 'bench/1.0', 'accept', '*/*', 'x-request-id', 'f0e1d2c3'],
    protocol: 'HTTP/1.1',
    remoteIp: '127.0.0.1',
    remotePort: 40000,
    localAddress: '127.0.0.1:10000',
    contentLength: 0,
    hasBody: false,
  };
}

/** A factory's filter maker from `config`, started as a connection manager starts it. */
function made(factory: typeof faultFactory | typeof rbacFactory, config: JsonObject): StreamFilterMaker {
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
      clusters: { get: () => undefined },
    } as never,
  );
  if (make === undefined) throw new Error(`${factory.name} starts no filter`);
  return make;
}

/** The chains measured, by label; each lets every request through. */
const CHAINS: Record<string, () => StreamFilterMaker[]> = {
  'the harness alone (a request and its record, no chain)': () => [],
  'the runner alone (one filter, no callbacks)': () => [() => ({ decodeHeaders: () => CONTINUE })],
  'fault (0% delay and abort)': () => [
    made(faultFactory, {
      delay: { fixed_delay: '1s', percentage: { numerator: 0 } },
      abort: { http_status: 503, percentage: { numerator: 0 } },
    }),
  ],
  'rbac (one allow-all policy, one shadow deny)': () => [
    made(rbacFactory, {
      rules: {
        action: 'ALLOW',
        policies: { all: { permissions: [{ any: true }], principals: [{ any: true }] } },
      },
      shadow_rules: {
        action: 'DENY',
        policies: {
          admin: { permissions: [{ url_path: { path: { prefix: '/admin' } } }], principals: [{ any: true }] },
        },
      },
    }),
  ],
};

const BODY = Buffer.from('{"items":[1,2,3],"page":2}');

/** Chain ends that take everything and answer nothing, as an exchange would minus the sockets. */
function ends(): FilterChainEnds {
  const req = request();
  return {
    req,
    info: newStreamInfo(req, '127.0.0.1:40000', '127.0.0.1:10000'),
    ended: false,
    router: {
      routeCluster: 'web',
      perRoute: () => undefined,
      clearRouteCache: () => {},
      decodeHeaders: () => {},
      decodeData: () => {},
      decodeTrailers: () => {},
    },
    bufferLimit: 1024 * 1024,
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
function exchange(makers: StreamFilterMaker[]): void {
  // No filters: the harness alone (the request and its record), subtracted from the others.
  if (makers.length === 0) {
    ends();
    return;
  }
  const runner = new FilterRunner(
    makers.map((make) => make() as StreamFilter),
    ends(),
  );
  runner.decodeHeaders();
  runner.encodeHeaders(200, ['content-type', 'application/json']);
  runner.encodeData(BODY, true);
  runner.destroy();
}

/** CPU µs per request of `makers`, the best of the rounds. */
function measure(makers: StreamFilterMaker[]): { best: number; all: number[] } {
  for (let i = 0; i < 5000; i++) exchange(makers);
  const all: number[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    const cpu = process.cpuUsage();
    for (let i = 0; i < REQUESTS; i++) exchange(makers);
    const used = process.cpuUsage(cpu);
    all.push((used.user + used.system) / REQUESTS);
  }
  return { best: Math.min(...all), all };
}

/** The filters part of `npm run bench`. */
export async function benchFilters(): Promise<BenchRow[]> {
  const results = Object.entries(CHAINS).map(([label, chain]) => ({ label, ...measure(chain()) }));
  const harness = results[0]?.best ?? 0;
  const runner = results[1]?.best ?? 0;
  return results.map((r, i) => ({
    name: `filters: ${r.label}, per request`,
    value: Number(r.best.toPrecision(3)),
    unit: 'µs CPU',
    note: [
      i === 0
        ? 'what every other row includes'
        : i === 1
          ? `${(r.best - harness).toFixed(2)} µs for the chain iteration`
          : `${(r.best - runner).toFixed(2)} µs over the runner alone`,
      `${REQUESTS.toLocaleString('en-US')} requests in-process per round; rounds: ${r.all.map((u) => u.toFixed(2)).join(', ')}`,
    ].join('; '),
  }));
}
