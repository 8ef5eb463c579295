/**
 * Request mirroring, served: the reference's route-mirror sandbox
 * (fixtures/reference-examples-v3/examples/route-mirror/envoy.yaml) with its four clusters on
 * local upstreams and two data-plane threads. Each mirrored request reaches its mirror with the
 * same method, path and body and its host suffixed `-shadow`; the client gets the primary's
 * answer without waiting for the mirror's; a `cluster_header` policy mirrors only requests that
 * name a cluster; a runtime fraction turned up through `/runtime_modify` starts mirroring.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { parse } from 'yaml';
import { type Dump, root } from '../../../../helpers/bootstrap.js';
import { httpListenerV3 } from '../../../../helpers/bootstraps.js';
import { type ProxyProcess, startProxyProcess } from '../../../../helpers/proxy-process.js';

const SANDBOX = join(root, 'fixtures/reference-examples-v3/examples/route-mirror/envoy.yaml');

interface Seen {
  method: string;
  path: string;
  host: string;
  body: string;
}

/** An upstream that records what it gets and answers its name; `hold` keeps it from answering. */
function upstream(name: string, hold = false): { server: http.Server; seen: Seen[]; release(): void } {
  const seen: Seen[] = [];
  const held: http.ServerResponse[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      seen.push({
        method: req.method ?? '',
        path: req.url ?? '',
        host: req.headers.host ?? '',
        body: Buffer.concat(chunks).toString(),
      });
      if (hold) held.push(res);
      else res.end(name);
    });
  });
  return {
    server,
    seen,
    release() {
      for (const res of held.splice(0)) res.end(name);
    },
  };
}

/** `method path` with `headers` and `body`: status and body. */
function request(
  port: number,
  method: string,
  path: string,
  headers: Record<string, string> = {},
  body?: string,
): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, method, path, headers, agent: false }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => {
        text += d;
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }));
    });
    req.setTimeout(20_000, () => req.destroy(new Error(`${method} ${path} timed out`)));
    req.on('error', reject);
    req.end(body);
  });
}

/** Waits (bounded) until `seen` holds `n` requests. */
async function until(seen: Seen[], n: number): Promise<void> {
  const deadline = Date.now() + 20_000;
  while (seen.length < n) {
    if (Date.now() > deadline) throw new Error(`${seen.length} of ${n} requests seen`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe("the reference's route-mirror sandbox, served with two data-plane threads", () => {
  const services = {
    service1: upstream('service1'),
    'service1-mirror': upstream('service1-mirror', true),
    service2: upstream('service2'),
    'service2-mirror': upstream('service2-mirror'),
  };
  let proxy: ProxyProcess;
  let port: number;

  before(async () => {
    for (const s of Object.values(services))
      await new Promise<void>((resolve) => s.server.listen(0, '127.0.0.1', resolve));
    const bootstrap = parse(readFileSync(SANDBOX, 'utf8')) as Dump;
    const listener = bootstrap.static_resources.listeners[0];
    listener.name = 'front';
    listener.address.socket_address = { address: '127.0.0.1', port_value: 0 };
    for (const cluster of bootstrap.static_resources.clusters as Dump[])
      cluster.load_assignment.endpoints[0].lb_endpoints[0].endpoint.address.socket_address = {
        address: '127.0.0.1',
        port_value: (services[cluster.name as keyof typeof services].server.address() as AddressInfo).port,
      };
    bootstrap.admin = { address: { socket_address: { address: '127.0.0.1', port_value: 0 } } };
    proxy = await startProxyProcess(bootstrap, ['--concurrency', '2']);
    port = await proxy.listenerPort('front');
  });
  after(async () => {
    services['service1-mirror'].release();
    await proxy?.stop();
    for (const s of Object.values(services)) s.server.close();
  });

  it('mirrors /service/1 to service1-mirror, host suffixed -shadow, the answer not waiting for the mirror', async () => {
    const mirror = services['service1-mirror'];
    assert.deepEqual(await request(port, 'GET', '/service/1'), { status: 200, body: 'service1' });
    assert.deepEqual(
      await request(port, 'POST', '/service/1/orders', { 'content-type': 'text/plain' }, 'a body'),
      {
        status: 200,
        body: 'service1',
      },
    );
    // Both answered while the mirror still holds both copies unanswered.
    await until(mirror.seen, 2);
    const primary = services.service1.seen;
    assert.equal(primary.length, 2);
    for (const [i, copy] of mirror.seen.entries()) {
      const original = primary.find((p) => p.path === copy.path) as Seen;
      assert.ok(original, copy.path);
      assert.equal(copy.method, original.method);
      assert.equal(copy.body, original.body);
      assert.equal(copy.host, original.host.replace(/:(\d+)$/, '-shadow:$1'), `copy ${i}`);
    }
    assert.equal(mirror.seen.find((c) => c.method === 'POST')?.body, 'a body');
    mirror.release();
  });

  it('mirrors /service/2 only to the cluster its x-mirror-cluster header names', async () => {
    const mirror = services['service2-mirror'];
    assert.deepEqual(await request(port, 'GET', '/service/2'), { status: 200, body: 'service2' });
    assert.deepEqual(await request(port, 'GET', '/service/2', { 'x-mirror-cluster': 'no-such-cluster' }), {
      status: 200,
      body: 'service2',
    });
    assert.deepEqual(await request(port, 'GET', '/service/2/x', { 'x-mirror-cluster': 'service2-mirror' }), {
      status: 200,
      body: 'service2',
    });
    await until(mirror.seen, 1);
    await new Promise((r) => setTimeout(r, 200));
    assert.deepEqual(
      mirror.seen.map((s) => s.path),
      ['/service/2/x'],
    );
    const stats = (await proxy.get('/stats?filter=upstream_rq_total')).body;
    assert.match(stats, /^cluster\.service2-mirror\.upstream_rq_total: 1$/m);
    assert.match(stats, /^cluster\.service1-mirror\.upstream_rq_total: 2$/m);
  });
});

describe('a mirror policy with a runtime fraction', () => {
  it('mirrors none at 0%, all once /runtime_modify sets its key to 100', async () => {
    const primary = upstream('primary');
    const mirror = upstream('mirror');
    for (const s of [primary, mirror])
      await new Promise<void>((resolve) => s.server.listen(0, '127.0.0.1', resolve));
    const cluster = (name: string, s: http.Server) => ({
      name,
      connect_timeout: '1s',
      load_assignment: {
        cluster_name: name,
        endpoints: [
          {
            lb_endpoints: [
              {
                endpoint: {
                  address: {
                    socket_address: { address: '127.0.0.1', port_value: (s.address() as AddressInfo).port },
                  },
                },
              },
            ],
          },
        ],
      },
    });
    const bootstrap = {
      static_resources: {
        clusters: [cluster('primary', primary.server), cluster('mirror', mirror.server)],
        listeners: [
          httpListenerV3('front', {
            route_config: {
              virtual_hosts: [
                {
                  name: 'v',
                  domains: ['*'],
                  routes: [
                    {
                      match: { prefix: '/' },
                      route: {
                        cluster: 'primary',
                        request_mirror_policies: [
                          {
                            cluster: 'mirror',
                            runtime_fraction: {
                              default_value: { numerator: 0 },
                              runtime_key: 'mirror.share',
                            },
                            disable_shadow_host_suffix_append: true,
                          },
                        ],
                      },
                    },
                  ],
                },
              ],
            },
            http_filters: [{ name: 'envoy.filters.http.router' }],
          }),
        ],
      },
      layered_runtime: { layers: [{ name: 'admin', admin_layer: {} }] },
      admin: { address: { socket_address: { address: '127.0.0.1', port_value: 0 } } },
    };
    const proxy = await startProxyProcess(bootstrap, ['--concurrency', '2']);
    try {
      const port = await proxy.listenerPort('front');
      for (let i = 0; i < 4; i++) assert.equal((await request(port, 'GET', '/a')).body, 'primary');
      assert.equal((await proxy.post('/runtime_modify?mirror.share=100')).status, 200);
      for (let i = 0; i < 4; i++) assert.equal((await request(port, 'GET', '/b')).body, 'primary');
      await until(mirror.seen, 4);
      await new Promise((r) => setTimeout(r, 200));
      assert.deepEqual(
        mirror.seen.map((s) => s.path),
        ['/b', '/b', '/b', '/b'],
      );
      // The suffix switched off: the copy carries the host as it goes upstream.
      assert.equal(mirror.seen[0]?.host, primary.seen.at(-1)?.host);
    } finally {
      await proxy.stop();
      primary.server.close();
      mirror.server.close();
    }
  });
});
