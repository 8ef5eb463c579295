/** Bootstrap pieces the TLS tests share. */
import type { JsonObject } from '../../events/index.js';

/** A listener on 127.0.0.1 port 0 with one HCM chain routing path prefixes to clusters. */
export function hcmListener(
  name: string,
  routes: Array<[string, string]>,
  chain: JsonObject = {},
): JsonObject {
  return {
    name,
    address: { socket_address: { address: '127.0.0.1', port_value: 0 } },
    filter_chains: [
      {
        ...chain,
        filters: [
          {
            name: 'proxy.filters.network.http_connection_manager',
            typed_config: {
              '@type':
                'type.googleapis.com/envoy.config.filter.network.http_connection_manager.v2.HttpConnectionManager',
              stat_prefix: name,
              route_config: {
                virtual_hosts: [
                  {
                    name: 'all',
                    domains: ['*'],
                    routes: routes.map(([prefix, c]) => ({ match: { prefix }, route: { cluster: c } })),
                  },
                ],
              },
              http_filters: [{ name: 'proxy.filters.http.router' }],
            },
          },
        ],
      },
    ],
  };
}
