/** Bootstraps shared by the admin endpoint tests. */
import { join } from 'node:path';
import type { JsonObject } from '../../events/index.js';
import { adminBootstrap, repoRoot } from '../helpers/admin.js';

export const CERT = join(repoRoot, 'fixtures/admin/server-cert.pem');
export const KEY = join(repoRoot, 'fixtures/admin/server-key.pem');

function endpoint(ip: string, port: number, extra: JsonObject = {}): JsonObject {
  return { endpoint: { address: { socket_address: { address: ip, port_value: port } } }, ...extra };
}

/** Two static clusters (one with outlier detection, HIGH thresholds, a canary), a TLS listener and a secret. */
export function richBootstrap(runtimeDir?: string): JsonObject {
  return adminBootstrap({
    node: { id: 'node-1', cluster: 'cluster-a', metadata: { team: 'edge' } },
    layered_runtime: {
      layers: [
        { name: 'static', static_layer: { health: { min: 5 }, flag: true } },
        ...(runtimeDir ? [{ name: 'disk', disk_layer: { symlink_root: runtimeDir } }] : []),
        { name: 'admin', admin_layer: {} },
      ],
    },
    static_resources: {
      clusters: [
        {
          name: 'web',
          outlier_detection: {},
          circuit_breakers: { thresholds: [{ priority: 'HIGH', max_connections: 7, max_retries: 2 }] },
          load_assignment: {
            cluster_name: 'web',
            endpoints: [
              {
                locality: { region: 'eu', zone: 'eu-1', sub_zone: 'rack1' },
                lb_endpoints: [
                  endpoint('10.0.0.1', 80, {
                    load_balancing_weight: 5,
                    metadata: { filter_metadata: { 'proxy.lb': { canary: true } } },
                  }),
                  endpoint('10.0.0.2', 80),
                ],
              },
            ],
          },
        },
        {
          name: 'dns',
          type: 'STRICT_DNS',
          load_assignment: {
            cluster_name: 'dns',
            endpoints: [{ lb_endpoints: [endpoint('svc.example', 80)] }],
          },
        },
      ],
      listeners: [
        {
          name: 'ingress',
          address: { socket_address: { address: '127.0.0.1', port_value: 0 } },
          filter_chains: [
            {
              tls_context: {
                common_tls_context: {
                  tls_certificates: [
                    { certificate_chain: { filename: CERT }, private_key: { filename: KEY } },
                  ],
                  validation_context: { trusted_ca: { filename: CERT } },
                },
              },
              filters: [
                {
                  name: 'proxy.filters.network.http_connection_manager',
                  typed_config: {
                    '@type':
                      'type.googleapis.com/envoy.config.filter.network.http_connection_manager.v2.HttpConnectionManager',
                    stat_prefix: 'ingress',
                    route_config: { name: 'local_route', virtual_hosts: [{ name: 'all', domains: ['*'] }] },
                  },
                },
              ],
            },
          ],
        },
      ],
      secrets: [
        {
          name: 'server_cert',
          tls_certificate: {
            certificate_chain: { filename: CERT },
            private_key: { inline_string: '-----BEGIN PRIVATE KEY-----\nsecret\n' },
            password: { inline_string: 'hunter2' },
          },
        },
      ],
    },
  });
}
