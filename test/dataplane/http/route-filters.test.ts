/**
 * The reference's own CORS and CSRF examples, served by the real `proxy` with two workers:
 * the compiled filters and the routes' policies reach every worker (each compiles the
 * listeners it folds), their stats add up in the primary's `/stats`, and a runtime key
 * changed through the admin reaches the workers' filters. The examples are used as copied
 * (fixtures/real-world/), with only the listener port, the upstream address and the access
 * log path changed so they run here.
 */
import assert from 'node:assert/strict';
import * as http2 from 'node:http2';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { JsonObject } from '../../../events/index.js';
import { type Dump, read, root } from '../../helpers/bootstrap.js';
import { type Answer, send } from '../../helpers/http-send.js';
import { type ProxyProcess, startProxyProcess } from '../../helpers/proxy-process.js';
import { onFreePorts } from '../../helpers/serves.js';

/** An h2c upstream (the examples' clusters speak HTTP/2) recording what reached it. */
async function h2Upstream(): Promise<{ server: http2.Http2Server; port: number; seen: string[] }> {
  const seen: string[] = [];
  const server = http2.createServer((req, res) => {
    seen.push(`${req.method} ${req.url}`);
    req.resume();
    req.on('end', () => res.end('upstream'));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { server, port: (server.address() as AddressInfo).port, seen };
}

/** A real-world example as served here: its one listener named `front`, its cluster at `port`. */
function example(file: string, port: number): JsonObject {
  const loaded = read({ configPath: join(root, 'fixtures/real-world', file) });
  if (!loaded.ok) throw new Error(loaded.errors.join('\n'));
  const b: Dump = onFreePorts(loaded.bootstrap as Dump);
  const listener = b.static_resources.listeners[0];
  listener.name = 'front';
  for (const log of listener.filter_chains[0].filters[0].typed_config.access_log ?? [])
    log.typed_config.path = '/dev/null';
  const cluster = b.static_resources.clusters[0];
  cluster.type = 'STATIC';
  cluster.load_assignment.endpoints[0].lb_endpoints[0].endpoint.address.socket_address = {
    address: '127.0.0.1',
    port_value: port,
  };
  return b;
}

/** Sends the same request on `times` fresh connections, so both workers answer some of them. */
async function each(times: number, ask: () => Promise<Answer>): Promise<Answer[]> {
  const out: Answer[] = [];
  for (let i = 0; i < times; i++) out.push(await ask());
  return out;
}

/** Polls the admin's `/stats` until `name` reaches `want` (workers report asynchronously). */
async function statReaches(proxy: ProxyProcess, name: string, want: number): Promise<number> {
  const deadline = Date.now() + 5000;
  for (;;) {
    const body = (await proxy.get(`/stats?filter=^${name.replaceAll('.', '\\.')}$`)).body;
    const value = Number(/: (\d+)/.exec(body)?.[1] ?? 0);
    if (value >= want || Date.now() > deadline) return value;
    await new Promise((r) => setTimeout(r, 50));
  }
}

const TIMES = 6;

/** An h2 upstream and the example front proxy on two workers, its 'front' listener's port. */
async function twoWorkerFront(file: string) {
  const upstream = await h2Upstream();
  const proxy = await startProxyProcess(example(file, upstream.port), ['--concurrency', '2']);
  return { upstream, proxy, port: await proxy.listenerPort('front') };
}

describe('csrf-samesite-front-envoy.yaml with --concurrency 2', () => {
  let upstream: Awaited<ReturnType<typeof h2Upstream>>;
  let proxy: ProxyProcess;
  let port: number;

  before(async () => {
    ({ upstream, proxy, port } = await twoWorkerFront('csrf-samesite-front-envoy.yaml'));
  });

  after(async () => {
    await proxy?.stop();
    upstream?.server.close();
  });

  it('refuses cross-site POSTs on every worker without reaching the upstream, and counts them', async () => {
    const before = upstream.seen.length;
    const answers = await each(TIMES, () =>
      send(port, 'POST', '/submit', { origin: 'http://evil.example' }, 'x'),
    );
    assert.deepEqual(
      answers.map((a) => [a.status, a.body]),
      Array(TIMES).fill([403, 'Invalid origin']),
    );
    assert.equal(upstream.seen.length, before);
    assert.equal(await statReaches(proxy, 'http.ingress_http.csrf.request_invalid', TIMES), TIMES);
  });

  it('passes same-site POSTs, and the routes that disable, shadow or widen the policy', async () => {
    const same = await each(TIMES, () =>
      send(port, 'POST', '/submit', { origin: `http://127.0.0.1:${port}` }),
    );
    assert.deepEqual(
      same.map((a) => a.status),
      Array(TIMES).fill(200),
    );
    for (const path of ['/csrf/disabled', '/csrf/shadow', '/csrf/additional_origin']) {
      const a = await send(port, 'POST', path, { origin: 'http://evil.example' });
      assert.equal(a.status, 200, path);
    }
  });

  it("answers preflights itself for the virtual host's any-origin policy, and marks responses", async () => {
    const before = upstream.seen.length;
    const answers = await each(TIMES, () =>
      send(port, 'OPTIONS', '/submit', {
        origin: 'http://app.example',
        'access-control-request-method': 'POST',
      }),
    );
    for (const a of answers) {
      assert.equal(a.status, 200);
      assert.equal(a.headers['access-control-allow-origin'], 'http://app.example');
    }
    assert.equal(upstream.seen.length, before);
    const get = await send(port, 'GET', '/page', { origin: 'http://app.example' });
    assert.equal(get.body, 'upstream');
    assert.equal(get.headers['access-control-allow-origin'], 'http://app.example');
  });

  it("the virtual host's runtime key, changed through the admin, reaches the workers' filter", async () => {
    assert.equal((await proxy.post('/runtime_modify?csrf.www.enabled=0')).status, 200);
    const deadline = Date.now() + 5000;
    let passed = 0;
    // Each connection may land on either worker: wait until several in a row see the change.
    while (passed < TIMES && Date.now() < deadline) {
      const a = await send(port, 'POST', '/submit', { origin: 'http://evil.example' });
      passed = a.status === 200 ? passed + 1 : 0;
    }
    assert.equal(passed, TIMES);
  });
});

describe('cors-backend-front-envoy.yaml with --concurrency 2', () => {
  let upstream: Awaited<ReturnType<typeof h2Upstream>>;
  let proxy: ProxyProcess;
  let port: number;

  before(async () => {
    ({ upstream, proxy, port } = await twoWorkerFront('cors-backend-front-envoy.yaml'));
  });

  after(async () => {
    await proxy?.stop();
    upstream?.server.close();
  });

  const preflight = (path: string, origin: string) =>
    send(port, 'OPTIONS', path, { origin, 'access-control-request-method': 'GET' });

  it('open: any origin (its matcher matches "*"), with the allowed methods', async () => {
    for (const a of await each(TIMES, () => preflight('/cors/open', 'http://anywhere.example'))) {
      assert.equal(a.status, 200);
      assert.equal(a.headers['access-control-allow-origin'], 'http://anywhere.example');
      assert.equal(a.headers['access-control-allow-methods'], 'GET');
    }
  });

  it('disabled: the preflight goes to the upstream unmarked', async () => {
    const a = await preflight('/cors/disabled', 'http://anywhere.example');
    assert.equal(a.body, 'upstream');
    assert.equal(a.headers['access-control-allow-origin'], undefined);
  });

  it('restricted: only origins under envoyproxy.io', async () => {
    const ok = await send(port, 'GET', '/cors/restricted', { origin: 'https://www.envoyproxy.io' });
    assert.equal(ok.headers['access-control-allow-origin'], 'https://www.envoyproxy.io');
    const no = await send(port, 'GET', '/cors/restricted', { origin: 'http://anywhere.example' });
    assert.equal(no.body, 'upstream');
    assert.equal(no.headers['access-control-allow-origin'], undefined);
    assert.equal(await statReaches(proxy, 'http.ingress_http.cors.origin_invalid', 1), 1);
  });
});
