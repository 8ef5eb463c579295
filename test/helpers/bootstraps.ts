/** Bootstrap pieces as users write them: the HTTP connection manager (v2 and v3), its listener, a file access log, a whole bootstrap. */
import type { JsonObject } from '../../events/index.js';

export const HCM_TYPE =
  'type.googleapis.com/envoy.config.filter.network.http_connection_manager.v2.HttpConnectionManager';

export const HCM_V3_TYPE =
  'type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager';

/** An admin on a free loopback port. */
export const LOOPBACK_ADMIN: JsonObject = {
  address: { socket_address: { address: '127.0.0.1', port_value: 0 } },
};

/** An `access_log` entry writing `format` to the file at `path`. */
export function fileAccessLog(path: string, format: string): JsonObject {
  return {
    name: 'envoy.access_loggers.file',
    typed_config: { '@type': 'type.googleapis.com/envoy.config.accesslog.v2.FileAccessLog', path, format },
  };
}

/** An HCM config whose one `*` virtual host holds `routes`, ending in the router. */
export function hcmWithRoutes(routes: JsonObject[], statPrefix = 'ingress_http'): JsonObject {
  return {
    stat_prefix: statPrefix,
    route_config: { virtual_hosts: [{ name: 'all', domains: ['*'], routes }] },
    http_filters: [{ name: 'envoy.router' }],
  };
}

/** The listener `http` on 127.0.0.1:0 whose one chain is the HCM `hcm` (its typed_config body). */
export function httpListener(hcm: JsonObject): JsonObject {
  return {
    name: 'http',
    address: { socket_address: { address: '127.0.0.1', port_value: 0 } },
    filter_chains: [
      {
        filters: [{ name: 'envoy.http_connection_manager', typed_config: { '@type': HCM_TYPE, ...hcm } }],
      },
    ],
  };
}

/** The HTTP connection manager as a network filter, as v3 configs write it: `stat_prefix` and `hcm`'s fields. */
export function hcmFilterV3(statPrefix: string, hcm: JsonObject): JsonObject {
  return {
    name: 'envoy.filters.network.http_connection_manager',
    typed_config: { '@type': HCM_V3_TYPE, stat_prefix: statPrefix, ...hcm },
  };
}

/**
 * The listener `name` on 127.0.0.1:0 whose one chain (with `chain`'s fields: a match, a
 * transport socket) is `hcmFilterV3(name, hcm)`.
 */
export function httpListenerV3(name: string, hcm: JsonObject, chain: JsonObject = {}): JsonObject {
  return {
    name,
    address: { socket_address: { address: '127.0.0.1', port_value: 0 } },
    filter_chains: [{ ...chain, filters: [hcmFilterV3(name, hcm)] }],
  };
}

/**
 * A whole bootstrap as a user writes it: the admin on a free port, `clusters`, and the
 * listener of `httpListener(hcm)`.
 */
export function httpBootstrap(clusters: JsonObject[], hcm: JsonObject): JsonObject {
  return { admin: LOOPBACK_ADMIN, static_resources: { clusters, listeners: [httpListener(hcm)] } };
}
