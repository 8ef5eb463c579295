/** Bootstrap pieces the TLS tests share. */
import * as https from 'node:https';
import type * as tls from 'node:tls';
import type { JsonObject } from '../../events/index.js';
import { httpListenerV3 } from '../helpers/bootstraps.js';
import type { Issued } from './certs.js';

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
                // A route may name a cluster CDS adds after this table loads (secrets.test.ts),
                // which validate_clusters (on by default for an inline table) refuses.
                validate_clusters: false,
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

/**
 * A listener on 127.0.0.1 port 0 whose one chain presents `server`, asks each client for a
 * certificate signed by `ca` (one is not required; `alpn` offered when given) and runs an HCM
 * (v3) of `hcm`'s fields, `stat_prefix` `name`.
 */
export function mtlsHcmListener(
  name: string,
  server: Issued,
  ca: Issued,
  hcm: JsonObject,
  alpn?: string[],
): JsonObject {
  return httpListenerV3(name, hcm, {
    transport_socket: {
      name: 'envoy.transport_sockets.tls',
      typed_config: {
        '@type': 'type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.DownstreamTlsContext',
        common_tls_context: {
          ...(alpn ? { alpn_protocols: alpn } : {}),
          tls_certificates: [
            { certificate_chain: { filename: server.cert }, private_key: { filename: server.key } },
          ],
          validation_context: { trusted_ca: { filename: ca.cert } },
        },
      },
    },
  });
}

export interface Answer {
  status: number;
  body: string;
  /** CN of the certificate the proxy presented. */
  cn: string;
}

/** GET over TLS to 127.0.0.1:`port` (path `/` unless `options` says), with the certificate CN it met. */
export function httpsGet(port: number, options: https.RequestOptions): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = https.get(
      { host: '127.0.0.1', port, path: '/', agent: false, timeout: 5000, ...options },
      (res) => {
        const cn = String((res.socket as tls.TLSSocket).getPeerCertificate().subject?.CN ?? '');
        let body = '';
        res.on('data', (d: Buffer) => {
          body += d;
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body, cn }));
      },
    );
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', reject);
  });
}
