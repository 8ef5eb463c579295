/**
 * The bootstrap this proxy runs under in the data-plane benchmark: admin and one listener on
 * port 0 (the real ports are read back from the admin), an HTTP connection manager routing
 * `/` to a STATIC cluster holding the nginx upstream.
 */
import type { JsonObject } from '../../events/index.js';

/** The listener's name, to find its bound port in `/listeners?format=json`. */
export const LISTENER_NAME = 'bench_http';

/** How the bootstrap differs from the plain HTTP/1.1 one. */
export interface BootstrapOptions {
  /** The cluster speaks HTTP/2 to its upstream (`http2_protocol_options`), as gRPC needs. */
  http2Upstream?: boolean;
  /** HTTP filters before the router (the filters part); none by default. */
  httpFilters?: JsonObject[];
}

/** The bootstrap, in the canonical proto3 JSON form. */
export function proxyBootstrap(upstreamPort: number, options: BootstrapOptions = {}): JsonObject {
  const loopback = (port: number) => ({ socket_address: { address: '127.0.0.1', port_value: port } });
  return {
    admin: { address: loopback(0) },
    static_resources: {
      clusters: [
        {
          name: 'upstream',
          type: 'STATIC',
          connect_timeout: '1s',
          ...(options.http2Upstream ? { http2_protocol_options: {} } : {}),
          load_assignment: {
            cluster_name: 'upstream',
            endpoints: [{ lb_endpoints: [{ endpoint: { address: loopback(upstreamPort) } }] }],
          },
        },
      ],
      listeners: [
        {
          name: LISTENER_NAME,
          address: loopback(0),
          filter_chains: [
            {
              filters: [
                {
                  name: 'envoy.http_connection_manager',
                  typed_config: {
                    '@type':
                      'type.googleapis.com/envoy.config.filter.network.http_connection_manager.v2.HttpConnectionManager',
                    stat_prefix: 'bench',
                    route_config: {
                      virtual_hosts: [
                        {
                          name: 'all',
                          domains: ['*'],
                          routes: [{ match: { prefix: '/' }, route: { cluster: 'upstream' } }],
                        },
                      ],
                    },
                    http_filters: [...(options.httpFilters ?? []), { name: 'envoy.router' }],
                  },
                },
              ],
            },
          ],
        },
      ],
    },
  };
}
