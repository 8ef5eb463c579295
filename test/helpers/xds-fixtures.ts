/** Upstreams, endpoint assignments and bootstraps for the xDS tests. */
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { JsonObject } from '../../events/index.js';

export interface Upstream {
  port: number;
  close(): Promise<void>;
}

export async function upstream(name: string): Promise<Upstream> {
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

export const GRPC_SOURCE = {
  api_config_source: { api_type: 'GRPC', grpc_services: [{ envoy_grpc: { cluster_name: 'xds_cluster' } }] },
};

export async function get(port: number): Promise<{ status: number; body: string }> {
  const res = await fetch(`http://127.0.0.1:${port}/`);
  return { status: res.status, body: await res.text() };
}

/** Waits until `check` holds, polling; fails after `timeoutMs`. */
export async function until(what: string, check: () => Promise<boolean>, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** An HTTP listener on a free port routing everything `routes` do not take to `cluster`. */
export function httpListener(name: string, cluster: string, routes: JsonObject[] = []): JsonObject {
  return {
    name,
    address: { socket_address: { address: '127.0.0.1', port_value: 0 } },
    filter_chains: [
      {
        filters: [
          {
            name: 'envoy.http_connection_manager',
            typed_config: {
              '@type':
                'type.googleapis.com/envoy.config.filter.network.http_connection_manager.v2.HttpConnectionManager',
              stat_prefix: name,
              route_config: {
                // The cluster may arrive by CDS after this inline table loads, which the
                // reference (and so the proxy) refuses unless validate_clusters is false.
                validate_clusters: false,
                virtual_hosts: [
                  {
                    name: 'all',
                    domains: ['*'],
                    routes: [...routes, { match: { prefix: '/' }, route: { cluster } }],
                  },
                ],
              },
              http_filters: [{ name: 'envoy.router' }],
            },
          },
        ],
      },
    ],
  };
}

/** A STATIC cluster of 127.0.0.1 members (`http2` for a management server). */
export function staticCluster(name: string, ports: number[], http2 = false): JsonObject {
  return {
    name,
    connect_timeout: '0.25s',
    type: 'STATIC',
    ...(http2 ? { http2_protocol_options: {} } : {}),
    load_assignment: assignment(name, ports),
  };
}

/** `dynamic_resources.ads_config` on the management cluster `xds_cluster`. */
export function adsConfig(version: 'V2' | 'V3' = 'V2'): JsonObject {
  return {
    api_type: 'GRPC',
    ...(version === 'V3' ? { transport_api_version: 'V3' } : {}),
    grpc_services: [{ envoy_grpc: { cluster_name: 'xds_cluster' } }],
  };
}

export const ADMIN: JsonObject = {
  access_log_path: '/dev/null',
  address: { socket_address: { address: '127.0.0.1', port_value: 0 } },
};

/**
 * A bootstrap whose clusters come by CDS over v3 ADS (`api_type` GRPC unless given) from the
 * management server on 127.0.0.1:`xdsPort` (the static cluster `xds_cluster`), with `listeners`
 * and, when given, the `node`.
 */
export function cdsOverAds(
  xdsPort: number,
  listeners: JsonObject[] = [],
  { apiType, node }: { apiType?: string; node?: JsonObject } = {},
): JsonObject {
  return {
    admin: ADMIN,
    ...(node ? { node } : {}),
    dynamic_resources: {
      cds_config: { ads: {}, resource_api_version: 'V3' },
      ads_config: { ...adsConfig('V3'), ...(apiType ? { api_type: apiType } : {}) },
    },
    static_resources: {
      ...(listeners.length > 0 ? { listeners } : {}),
      clusters: [staticCluster('xds_cluster', [xdsPort], true)],
    },
  };
}

/** One stat's value from the admin's `/stats`, or undefined when it is not shown. */
export async function statValue(
  proxy: { get(path: string): Promise<{ body: string }> },
  name: string,
): Promise<number | undefined> {
  const escaped = name.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  const body = (await proxy.get(`/stats?filter=${encodeURIComponent(`^${escaped}$`)}`)).body;
  const value = new RegExp(`^${escaped}: (\\d+)$`, 'm').exec(body)?.[1];
  return value === undefined ? undefined : Number(value);
}
