/**
 * The HTTP local rate limit filter: its compile step (names, type URLs, refusals by name) and
 * the reference's local_ratelimit sandbox (fixtures/reference-examples-v3/examples/
 * local_ratelimit/envoy.yaml) served against a real upstream on 127.0.0.1, with one data-plane
 * thread and with two.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import * as http from 'node:http';
import * as http2 from 'node:http2';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { parse } from 'yaml';
import { bootstrapOf, type Dump, errorsOf, loadYaml, root } from '../../../../helpers/bootstrap.js';
import { type ProxyProcess, startProxyProcess } from '../../../../helpers/proxy-process.js';

const SANDBOX = join(root, 'fixtures/reference-examples-v3/examples/local_ratelimit/envoy.yaml');

/** A bootstrap whose one connection manager runs `filter` then the router. */
function withFilter(filter: string): string {
  return `static_resources: { listeners: [{ name: l, address: { socket_address: { address: 127.0.0.1, port_value: 0 } }, filter_chains: [{ filters: [{ name: envoy.filters.network.http_connection_manager, typed_config: { '@type': type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager, stat_prefix: s, route_config: { virtual_hosts: [{ name: v, domains: ['*'], routes: [{ match: { prefix: / }, direct_response: { status: 200 } }] }] }, http_filters: [${filter}, { name: envoy.filters.http.router }] } }] }] }] }`;
}

const V3 = `'@type': type.googleapis.com/envoy.extensions.filters.http.local_ratelimit.v3.LocalRateLimit`;
const BUCKET = 'token_bucket: { max_tokens: 2, fill_interval: 1s }';

describe('the local rate limit compile step', () => {
  it('is found by every name and by its v3 type URL alone', () => {
    for (const filter of [
      `{ name: envoy.filters.http.local_ratelimit, typed_config: { ${V3}, stat_prefix: p, ${BUCKET} } }`,
      `{ name: proxy.filters.http.local_ratelimit, typed_config: { ${V3}, stat_prefix: p } }`,
      `{ name: my-limiter, typed_config: { ${V3}, stat_prefix: p, ${BUCKET} } }`,
      `{ name: x, typed_config: { '@type': type.googleapis.com/xds.type.v3.TypedStruct, type_url: type.googleapis.com/envoy.extensions.filters.http.local_ratelimit.v3.LocalRateLimit, value: { stat_prefix: p } } }`,
    ])
      assert.equal(
        (bootstrapOf(loadYaml(withFilter(filter))) as Dump).static_resources.listeners[0].filter_chains[0]
          .filters[0].typed_config.http_filters[0].typed_config['@type'],
        'type.googleapis.com/envoy.config.filter.http.local_ratelimit.v2.LocalRateLimit',
        filter,
      );
  });

  it('refuses by name what it does not implement, and a bad bucket', () => {
    const errors = errorsOf(
      loadYaml(
        withFilter(
          `{ name: envoy.filters.http.local_ratelimit, typed_config: { ${V3}, stat_prefix: p, token_bucket: { max_tokens: 0, fill_interval: 0.01s }, stage: 11, response_headers_to_add: [{ header: { key: x, value: '%START_TIME%' } }] } }`,
        ),
      ),
    ).join('\n');
    for (const field of [
      'token_bucket.max_tokens: must be greater than 0',
      'token_bucket.fill_interval: must be at least 50ms',
      'stage: must be in [0, 10]',
      'response_headers_to_add[0].header.value: header formatter variables',
    ])
      assert.ok(errors.includes(field), `${field} in\n${errors}`);
  });

  it("refuses descriptors the reference refuses: off its fill interval's ticks, twice, without the filter's bucket", () => {
    const descriptor = (value: string, fill: string) =>
      `{ entries: [{ key: k, value: ${value} }], token_bucket: { max_tokens: 1, fill_interval: ${fill} } }`;
    const errors = errorsOf(
      loadYaml(
        withFilter(
          `{ name: a, typed_config: { ${V3}, stat_prefix: p, ${BUCKET}, descriptors: [${descriptor('x', '1.5s')}, ${descriptor('y', '2s')}, ${descriptor('y', '2s')}, { entries: [], token_bucket: { max_tokens: 1, fill_interval: 1s } }] } }, { name: b, typed_config: { ${V3}, stat_prefix: q, descriptors: [${descriptor('x', '1s')}] } }`,
        ),
      ),
    ).join('\n');
    for (const finding of [
      'http_filters[0].typed_config.descriptors[0].token_bucket.fill_interval: local rate descriptor limit is not a multiple of token bucket fill timer',
      'http_filters[0].typed_config.descriptors[2]: duplicate descriptor in the local rate descriptor: [["k","y"]]',
      'http_filters[0].typed_config.descriptors[3].entries: at least one entry is required',
      "http_filters[1].typed_config.descriptors[0]: needs the filter's token_bucket",
    ])
      assert.ok(errors.includes(finding), `${finding} in\n${errors}`);
    assert.ok(!errors.includes('descriptors[1]'), errors);
  });

  it("refuses a route's config without its own bucket, naming the entry", () => {
    const errors = errorsOf(
      loadYaml(
        withFilter(
          `{ name: envoy.filters.http.local_ratelimit, typed_config: { ${V3}, stat_prefix: p } }`,
        ).replace(
          'direct_response: { status: 200 } }',
          `direct_response: { status: 200 }, typed_per_filter_config: { envoy.filters.http.local_ratelimit: { ${V3}, stat_prefix: r } } }`,
        ),
      ),
    ).join('\n');
    assert.match(
      errors,
      /routes\[0\]\.typed_per_filter_config\["envoy\.filters\.http\.local_ratelimit"\]\.token_bucket: local rate limit token bucket must be set for per filter configs/,
    );
  });
});

/** GET `path` on a fresh connection: status, the limit's header and the body. */
function get(
  port: number,
  path = '/',
): Promise<{ status: number; limited: string | undefined; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.get({ host: '127.0.0.1', port, path, agent: false }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => {
        body += d;
      });
      res.on('end', () =>
        resolve({ status: res.statusCode ?? 0, limited: res.headers['x-local-rate-limit'] as string, body }),
      );
    });
    req.setTimeout(10_000, () => req.destroy(new Error(`GET ${path} timed out`)));
    req.on('error', reject);
  });
}

describe("the reference's local_ratelimit sandbox, served", () => {
  let upstream: http.Server;

  before(async () => {
    upstream = http.createServer((_req, res) => res.end('service'));
    await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
  });
  after(() => upstream.close());

  /**
   * The sandbox as pasted but for where things are (listeners on free ports, its `service`
   * cluster on the local upstream) and its fill interval: an hour instead of 5 s, so no token
   * comes back while a loaded machine runs the test.
   */
  async function serve(concurrency: string): Promise<{ proxy: ProxyProcess; port: number }> {
    const bootstrap = parse(readFileSync(SANDBOX, 'utf8')) as Dump;
    const listeners: Dump[] = bootstrap.static_resources.listeners;
    listeners.forEach((l, i) => {
      l.name = `listener_${i}`;
      l.address.socket_address = { address: '127.0.0.1', port_value: 0 };
      l.filter_chains[0].filters[0].typed_config.http_filters[0].typed_config.token_bucket.fill_interval =
        '3600s';
    });
    const service = bootstrap.static_resources.clusters.find((c: Dump) => c.name === 'service');
    service.load_assignment.endpoints[0].lb_endpoints[0].endpoint.address.socket_address = {
      address: '127.0.0.1',
      port_value: (upstream.address() as AddressInfo).port,
    };
    bootstrap.admin = { address: { socket_address: { address: '127.0.0.1', port_value: 0 } } };
    const proxy = await startProxyProcess(bootstrap, ['--concurrency', concurrency]);
    return { proxy, port: await proxy.listenerPort('listener_1') };
  }

  it('allows the bucket (2 requests), then answers 429 local_rate_limited with its header; counts each', async () => {
    const { proxy, port } = await serve('1');
    try {
      assert.deepEqual(await get(port), { status: 200, limited: undefined, body: 'service' });
      assert.deepEqual(await get(port), { status: 200, limited: undefined, body: 'service' });
      assert.deepEqual(await get(port), { status: 429, limited: 'true', body: 'local_rate_limited' });
      const stats = (await proxy.get('/stats?filter=http_local_rate_limit')).body;
      assert.match(stats, /^http_local_rate_limiter\.http_local_rate_limit\.enabled: 3$/m);
      assert.match(stats, /^http_local_rate_limiter\.http_local_rate_limit\.ok: 2$/m);
      assert.match(stats, /^http_local_rate_limiter\.http_local_rate_limit\.rate_limited: 1$/m);
      assert.match(stats, /^http_local_rate_limiter\.http_local_rate_limit\.enforced: 1$/m);
    } finally {
      await proxy.stop();
    }
  });

  it('with two data-plane threads, allows exactly the bucket between them and counts it once', async () => {
    // Each thread held a share of the bucket (one token each here), so how many passed hung on
    // where the kernel put each connection; now the threads take from one bucket.
    const { proxy, port } = await serve('2');
    try {
      const answers = [];
      // Each GET on its own connection: the kernel spreads them over both threads' sockets.
      for (let i = 0; i < 12; i++) answers.push((await get(port)).status);
      assert.deepEqual(answers, [200, 200, ...Array(10).fill(429)]);
      const stats = (await proxy.get('/stats?filter=http_local_rate_limit')).body;
      assert.match(stats, /^http_local_rate_limiter\.http_local_rate_limit\.enabled: 12$/m);
      assert.match(stats, /^http_local_rate_limiter\.http_local_rate_limit\.ok: 2$/m);
      assert.match(stats, /^http_local_rate_limiter\.http_local_rate_limit\.rate_limited: 10$/m);
    } finally {
      await proxy.stop();
    }
  });
});

const DOCS = join(
  root,
  'fixtures/reference-examples-v3/envoy/docs/root/configuration/http/http_filters/_include',
);

/** GET `path` on a fresh connection with `headers`: status, body and the response headers. */
function request(
  port: number,
  path: string,
  headers: Record<string, string> = {},
): Promise<{ status: number; body: string; headers: http.IncomingHttpHeaders }> {
  return new Promise((resolve, reject) => {
    const req = http.get({ host: '127.0.0.1', port, path, headers, agent: false }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => {
        body += d;
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body, headers: res.headers }));
    });
    req.setTimeout(10_000, () => req.destroy(new Error(`GET ${path} timed out`)));
    req.on('error', reject);
  });
}

describe("the reference's per-route and descriptor configs, served with two data-plane threads", () => {
  const upstreams: http.Server[] = [];
  const ports = new Map<string, number>();

  before(async () => {
    for (const name of ['default_service', 'service_protected_by_rate_limit']) {
      const server = http.createServer((_req, res) => res.end(name));
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      upstreams.push(server);
      ports.set(name, (server.address() as AddressInfo).port);
    }
  });
  after(() => {
    for (const s of upstreams) s.close();
  });

  /**
   * A docs bootstrap as pasted but for where things are (its listener on a free port, its two
   * clusters on the local upstreams) and what `tweak` changes of its route's config.
   */
  async function serve(
    file: string,
    tweak: (perRoute: Dump) => void,
  ): Promise<{ proxy: ProxyProcess; port: number }> {
    const bootstrap = parse(readFileSync(join(DOCS, file), 'utf8')) as Dump;
    const listener = bootstrap.static_resources.listeners[0];
    listener.name = 'docs';
    listener.address.socket_address = { address: '127.0.0.1', port_value: 0 };
    const hcm = listener.filter_chains[0].filters[0].typed_config;
    tweak(
      hcm.route_config.virtual_hosts[0].routes[0].typed_per_filter_config[
        'envoy.filters.http.local_ratelimit'
      ],
    );
    for (const cluster of bootstrap.static_resources.clusters)
      cluster.load_assignment.endpoints[0].lb_endpoints[0].endpoint.address.socket_address = {
        address: '127.0.0.1',
        port_value: ports.get(cluster.name),
      };
    bootstrap.admin = { address: { socket_address: { address: '127.0.0.1', port_value: 0 } } };
    const proxy = await startProxyProcess(bootstrap, ['--concurrency', '2']);
    return { proxy, port: await proxy.listenerPort('docs') };
  }

  it("limits the route with its own bucket, and leaves the others to the filter's (off)", async () => {
    // Its bucket made small enough to empty, and refilled once an hour so no token comes back.
    const { proxy, port } = await serve('local-rate-limit-route-specific-configuration.yaml', (perRoute) => {
      perRoute.token_bucket = { max_tokens: 3, tokens_per_fill: 1, fill_interval: '3600s' };
    });
    try {
      const limited = [];
      for (let i = 0; i < 5; i++) limited.push(await request(port, '/path/with/rate/limit'));
      assert.deepEqual(
        limited.map((r) => [r.status, r.body, r.headers['x-local-rate-limit']]),
        [
          ...Array(3).fill([200, 'service_protected_by_rate_limit', undefined]),
          ...Array(2).fill([429, 'local_rate_limited', 'true']),
        ],
      );
      for (let i = 0; i < 5; i++) assert.equal((await request(port, '/')).status, 200);
      const stats = (await proxy.get('/stats?filter=http_local_rate_limit')).body;
      assert.match(stats, /^http_local_rate_limiter\.http_local_rate_limit\.enabled: 5$/m);
      assert.match(stats, /^http_local_rate_limiter\.http_local_rate_limit\.ok: 3$/m);
      assert.match(stats, /^http_local_rate_limiter\.http_local_rate_limit\.enforced: 2$/m);
    } finally {
      await proxy.stop();
    }
  });

  it("gives each descriptor the route's actions make its own bucket, with the draft RateLimit headers", async () => {
    // An hour for every fill interval (a multiple, as the reference requires), and the headers on.
    const { proxy, port } = await serve('local-rate-limit-with-descriptors.yaml', (perRoute) => {
      perRoute.token_bucket.fill_interval = '3600s';
      for (const d of perRoute.descriptors) d.token_bucket.fill_interval = '3600s';
      perRoute.enable_x_ratelimit_headers = 'DRAFT_VERSION_03';
    });
    const foo = { 'x-envoy-downstream-service-cluster': 'foo' };
    const limits = (r: { headers: http.IncomingHttpHeaders }) =>
      [r.headers['x-ratelimit-limit'], r.headers['x-ratelimit-remaining']].join('/');
    try {
      const bar = [];
      for (let i = 0; i < 11; i++) bar.push(await request(port, '/foo/bar', foo));
      assert.deepEqual(
        bar.map((r) => [r.status, limits(r)]),
        [...Array.from({ length: 10 }, (_v, i) => [200, `10/${9 - i}`]), [429, '10/0']],
      );
      const refused = bar[10];
      assert.equal(refused?.headers['x-test-rate-limit'], 'true');
      const reset = Number(refused?.headers['x-ratelimit-reset']);
      assert.ok(reset > 0 && reset <= 360, `a token comes back within 360 s, said ${reset}`);
      // Its other descriptor has its own bucket; a request making no descriptor takes the route's.
      const bar2 = await request(port, '/foo/bar2', foo);
      assert.deepEqual([bar2.status, limits(bar2)], [200, '100/99']);
      const plain = await request(port, '/foo/bar');
      assert.equal(plain.status, 200);
      assert.equal(plain.headers['x-ratelimit-limit'], '1000');
      const stats = (await proxy.get('/stats?filter=http_local_rate_limit')).body;
      assert.match(stats, /^test\.http_local_rate_limit\.enabled: 13$/m);
      assert.match(stats, /^test\.http_local_rate_limit\.ok: 12$/m);
      assert.match(stats, /^test\.http_local_rate_limit\.rate_limited: 1$/m);
    } finally {
      await proxy.stop();
    }
  });
});

describe('local_rate_limit_per_downstream_connection and rate_limited_as_resource_exhausted, served with two data-plane threads', () => {
  let proxy: ProxyProcess;
  let port: number;

  before(async () => {
    // The reference docs' filter, with each connection's own bucket of 2 (an hour to refill).
    const yaml = withFilter(
      `{ name: envoy.filters.http.local_ratelimit, typed_config: { ${V3}, stat_prefix: per_connection, token_bucket: { max_tokens: 2, tokens_per_fill: 2, fill_interval: 3600s }, filter_enabled: { runtime_key: local_rate_limit_enabled, default_value: { numerator: 100, denominator: HUNDRED } }, filter_enforced: { runtime_key: local_rate_limit_enforced, default_value: { numerator: 100, denominator: HUNDRED } }, local_rate_limit_per_downstream_connection: true, rate_limited_as_resource_exhausted: true } }`,
    );
    const bootstrap = parse(yaml) as Dump;
    bootstrap.admin = { address: { socket_address: { address: '127.0.0.1', port_value: 0 } } };
    proxy = await startProxyProcess(bootstrap, ['--concurrency', '2']);
    port = await proxy.listenerPort('l');
  });
  after(async () => {
    await proxy?.stop();
  });

  it('gives each HTTP/1.1 connection its own bucket: the third request on one is refused, a new connection is let in', async () => {
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    const statuses = async (n: number) => {
      const out: number[] = [];
      for (let i = 0; i < n; i++)
        out.push(
          await new Promise<number>((resolve, reject) => {
            const req = http.get({ host: '127.0.0.1', port, path: '/', agent }, (res) => {
              res.resume();
              res.on('end', () => resolve(res.statusCode ?? 0));
            });
            req.setTimeout(10_000, () => req.destroy(new Error('timed out')));
            req.on('error', reject);
          }),
        );
      return out;
    };
    try {
      assert.deepEqual(await statuses(3), [200, 200, 429]);
    } finally {
      agent.destroy();
    }
    // Another connection, another bucket: the process-wide bucket would refuse it.
    assert.equal((await get(port)).status, 200);
    assert.equal((await get(port)).status, 200);
  });

  it('answers a refused gRPC request RESOURCE_EXHAUSTED (8), not UNAVAILABLE; an HTTP/2 connection has its own bucket', async () => {
    const session = http2.connect(`http://127.0.0.1:${port}`);
    const call = () =>
      new Promise<http2.IncomingHttpHeaders>((resolve, reject) => {
        const stream = session.request({
          ':method': 'POST',
          ':path': '/pkg.Svc/Call',
          'content-type': 'application/grpc',
        });
        let head: http2.IncomingHttpHeaders = {};
        stream.on('response', (h) => {
          head = h;
        });
        stream.on('trailers', (t) => {
          head = { ...head, ...t };
        });
        stream.resume();
        stream.on('end', () => resolve(head));
        stream.on('error', reject);
        stream.end(Buffer.from([0, 0, 0, 0, 0]));
      });
    try {
      const answers = [await call(), await call(), await call()];
      // The route's direct response answers the first two (its own gRPC status); the bucket refuses the third.
      assert.deepEqual(
        answers.map((h) => [h[':status'], h['grpc-status'] === '8']),
        [
          [200, false],
          [200, false],
          [200, true],
        ],
      );
      assert.equal(answers[2]?.['grpc-message'], 'local_rate_limited');
    } finally {
      session.close();
    }
  });
});
