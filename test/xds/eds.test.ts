/**
 * EDS over gRPC against the test management server: the proxy subscribes, ACKs, serves the
 * discovered members, NACKs a bad update naming resource and field while it keeps serving,
 * replaces members under traffic without a failed request, and reconnects to a restarted server.
 */
import assert from 'node:assert/strict';
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import type { JsonObject } from '../../events/index.js';
import { type ProxyProcess, startProxyProcess } from '../helpers/proxy-process.js';
import { XdsServer } from '../helpers/xds-server.js';

interface Upstream {
  port: number;
  close(): Promise<void>;
}

async function upstream(name: string): Promise<Upstream> {
  const server = http.createServer((_req, res) => res.end(name));
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as AddressInfo).port,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

export function assignment(cluster: string, ports: number[], extra: JsonObject = {}): JsonObject {
  return {
    cluster_name: cluster,
    endpoints: [
      {
        lb_endpoints: ports.map((port) => ({
          endpoint: { address: { socket_address: { address: '127.0.0.1', port_value: port } } },
          ...extra,
        })),
      },
    ],
  };
}

/** The reference's "mostly static with dynamic EDS" shape, on free ports, with `source` for the EDS config. */
export function edsBootstrap(xdsPort: number, source: JsonObject, extra: JsonObject = {}): JsonObject {
  return {
    admin: {
      access_log_path: '/dev/null',
      address: { socket_address: { address: '127.0.0.1', port_value: 0 } },
    },
    ...extra,
    static_resources: {
      listeners: [
        {
          name: 'listener_0',
          address: { socket_address: { address: '127.0.0.1', port_value: 0 } },
          filter_chains: [
            {
              filters: [
                {
                  name: 'envoy.http_connection_manager',
                  typed_config: {
                    '@type':
                      'type.googleapis.com/envoy.config.filter.network.http_connection_manager.v2.HttpConnectionManager',
                    stat_prefix: 'ingress_http',
                    route_config: {
                      virtual_hosts: [
                        {
                          name: 'all',
                          domains: ['*'],
                          routes: [{ match: { prefix: '/' }, route: { cluster: 'some_service' } }],
                        },
                      ],
                    },
                    http_filters: [{ name: 'envoy.router' }],
                  },
                },
              ],
            },
          ],
        },
      ],
      clusters: [
        {
          name: 'some_service',
          connect_timeout: '0.25s',
          type: 'EDS',
          eds_cluster_config: { eds_config: source },
        },
        {
          name: 'xds_cluster',
          connect_timeout: '0.25s',
          type: 'STATIC',
          http2_protocol_options: {},
          load_assignment: {
            cluster_name: 'xds_cluster',
            endpoints: [
              {
                lb_endpoints: [
                  {
                    endpoint: { address: { socket_address: { address: '127.0.0.1', port_value: xdsPort } } },
                  },
                ],
              },
            ],
          },
        },
      ],
    },
  };
}

const GRPC_SOURCE = {
  api_config_source: { api_type: 'GRPC', grpc_services: [{ envoy_grpc: { cluster_name: 'xds_cluster' } }] },
};

async function get(port: number): Promise<{ status: number; body: string }> {
  const res = await fetch(`http://127.0.0.1:${port}/`);
  return { status: res.status, body: await res.text() };
}

/** Waits until `check` holds, polling; fails after `timeoutMs`. */
async function until(what: string, check: () => Promise<boolean>, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe('EDS over gRPC (EndpointDiscoveryService)', () => {
  let xds: XdsServer;
  let proxy: ProxyProcess;
  let port: number;
  const upstreams: Upstream[] = [];

  before(async () => {
    xds = await XdsServer.start();
    for (const name of ['a', 'b', 'c', 'd']) upstreams.push(await upstream(name));
    xds.set('eds', [assignment('some_service', [upstreams[0]!.port, upstreams[1]!.port])], 'v1');
    proxy = await startProxyProcess(edsBootstrap(xds.port, GRPC_SOURCE), ['--concurrency', '1']);
    port = await proxy.listenerPort('listener_0');
  });

  after(async () => {
    await proxy?.stop();
    await xds?.stop();
    await Promise.all(upstreams.map((u) => u.close()));
  });

  it('subscribes by name, ACKs, and serves the discovered members', async () => {
    const ack = await xds.ack('eds', 'v1');
    assert.deepEqual(ack.resource_names, ['some_service']);
    assert.equal(ack.method, '/envoy.api.v2.EndpointDiscoveryService/StreamEndpoints');
    assert.ok(ack.node, 'the first request carries the node');
    const bodies = new Set<string>();
    for (let i = 0; i < 10; i++) {
      const res = await get(port);
      assert.equal(res.status, 200);
      bodies.add(res.body);
    }
    assert.deepEqual([...bodies].sort(), ['a', 'b']);
    const clusters = (await proxy.get('/clusters')).body;
    assert.match(clusters, new RegExp(`some_service::127\\.0\\.0\\.1:${upstreams[0]!.port}::cx_active`));
    const stats = (await proxy.get('/stats?filter=some_service.update_')).body;
    assert.match(stats, /cluster\.some_service\.update_success: [1-9]/);
  });

  it('replaces members under steady traffic with zero failed requests', async () => {
    let failures = 0;
    let total = 0;
    const seen = new Set<string>();
    let running = true;
    const load = (async () => {
      while (running) {
        const res = await get(port).catch(() => ({ status: 0, body: '' }));
        total++;
        if (res.status !== 200) failures++;
        else seen.add(res.body);
      }
    })();
    await new Promise((r) => setTimeout(r, 200));
    xds.set('eds', [assignment('some_service', [upstreams[2]!.port, upstreams[3]!.port])], 'v2');
    await xds.ack('eds', 'v2');
    await until('traffic on the new members', async () => seen.has('c') && seen.has('d'));
    seen.clear();
    await new Promise((r) => setTimeout(r, 300));
    running = false;
    await load;
    assert.equal(failures, 0, `${failures} of ${total} requests failed`);
    assert.deepEqual([...seen].sort(), ['c', 'd'], 'only the new members serve after the update');
  });

  it('NACKs a bad update naming resource and field, and keeps serving the last good members', async () => {
    const from = xds.requests.length;
    xds.set(
      'eds',
      [assignment('some_service', [upstreams[0]!.port], { load_balancing_weight: 0 })],
      'v3-bad',
    );
    const nack = await xds.nack('eds', 10_000, from);
    assert.equal(nack.version_info, 'v2', 'a NACK carries the last accepted version');
    assert.match(
      nack.error_detail?.message ?? '',
      /ClusterLoadAssignment 'some_service': endpoints\[0\]\.lb_endpoints\[0\]\.load_balancing_weight: must be >= 1/,
    );
    for (let i = 0; i < 6; i++) {
      const res = await get(port);
      assert.equal(res.status, 200);
      assert.ok(['c', 'd'].includes(res.body), res.body);
    }
    const stats = (await proxy.get('/stats?filter=some_service.update_rejected')).body;
    assert.match(stats, /cluster\.some_service\.update_rejected: 1/);
  });
});
