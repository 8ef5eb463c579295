/**
 * Users paste the reference's configs: ext_authz and ratelimit load by every spelling the
 * reference accepts (long and short `envoy.` names, their `proxy.` forms, v2 and v3 type URLs,
 * a v2 `config` Struct, a TypedStruct), each resolving to the filter's one config message, and
 * a field the filter does not honour is refused naming its path.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { bootstrapOf, type Dump, errorsOf, loadYaml } from '../../../../helpers/bootstrap.js';

const ROUTES = `route_config: { virtual_hosts: [{ name: v, domains: ['*'], routes: [{ match: { prefix: / }, route: { cluster: c } }] }] }`;
const CLUSTER = `clusters: [{ name: c, connect_timeout: 1s, http2_protocol_options: {}, load_assignment: { cluster_name: c, endpoints: [{ lb_endpoints: [{ endpoint: { address: { socket_address: { address: 127.0.0.1, port_value: 9 } } } }] }] } }]`;

function bootstrap(filter: string): string {
  return `static_resources: { ${CLUSTER}, listeners: [{ name: l, address: { socket_address: { address: 127.0.0.1, port_value: 0 } }, filter_chains: [{ filters: [{ name: envoy.http_connection_manager, typed_config: { "@type": type.googleapis.com/envoy.config.filter.network.http_connection_manager.v2.HttpConnectionManager, stat_prefix: s, ${ROUTES}, http_filters: [${filter}, { name: envoy.router }] } }] }] }] }`;
}

function firstFilterType(filter: string): unknown {
  const b = bootstrapOf(loadYaml(bootstrap(filter))) as Dump;
  return b.static_resources.listeners[0].filter_chains[0].filters[0].typed_config.http_filters[0]
    .typed_config['@type'];
}

const AUTHZ = 'grpc_service: { envoy_grpc: { cluster_name: c } }';
const RLS = 'domain: d, rate_limit_service: { grpc_service: { envoy_grpc: { cluster_name: c } } }';
const TYPED = (url: string, body: string) =>
  `{ "@type": type.googleapis.com/udpa.type.v1.TypedStruct, type_url: type.googleapis.com/${url}, value: { ${body} } }`;

describe('ext_authz and ratelimit by every spelling', () => {
  const EXT_AUTHZ = 'type.googleapis.com/envoy.config.filter.http.ext_authz.v2.ExtAuthz';
  const RATE_LIMIT = 'type.googleapis.com/envoy.config.filter.http.rate_limit.v2.RateLimit';

  it('ext_authz: envoy.ext_authz with a v2 config, proxy. names with v2 and v3 type URLs, a TypedStruct', () => {
    for (const filter of [
      `{ name: envoy.ext_authz, config: { ${AUTHZ} } }`,
      `{ name: proxy.ext_authz, typed_config: { "@type": ${EXT_AUTHZ}, ${AUTHZ} } }`,
      `{ name: proxy.filters.http.ext_authz, typed_config: { "@type": type.googleapis.com/envoy.extensions.filters.http.ext_authz.v3.ExtAuthz, ${AUTHZ} } }`,
      `{ name: envoy.filters.http.ext_authz, typed_config: ${TYPED('envoy.extensions.filters.http.ext_authz.v3.ExtAuthz', AUTHZ)} }`,
    ])
      assert.equal(firstFilterType(filter), EXT_AUTHZ, filter);
  });

  it('ratelimit: envoy.rate_limit with a v2 config, proxy. names with v2 and v3 type URLs, a TypedStruct', () => {
    for (const filter of [
      `{ name: envoy.rate_limit, config: { ${RLS} } }`,
      `{ name: proxy.rate_limit, typed_config: { "@type": ${RATE_LIMIT}, ${RLS} } }`,
      `{ name: proxy.filters.http.ratelimit, typed_config: { "@type": type.googleapis.com/envoy.extensions.filters.http.ratelimit.v3.RateLimit, ${RLS} } }`,
      `{ name: envoy.filters.http.ratelimit, typed_config: ${TYPED('envoy.extensions.filters.http.ratelimit.v3.RateLimit', RLS)} }`,
    ])
      assert.equal(firstFilterType(filter), RATE_LIMIT, filter);
  });

  it('refuses what the filters do not honour, naming the field', () => {
    const errors = errorsOf(
      loadYaml(bootstrap(`{ name: envoy.ext_authz, config: { ${AUTHZ}, include_peer_certificate: true } }`)),
    );
    assert.ok(
      errors.some((e) => e.includes('http_filters[0].config.include_peer_certificate')),
      errors.join('\n'),
    );
    const rl = errorsOf(
      loadYaml(
        bootstrap(`{ name: envoy.rate_limit, config: { ${RLS}, rate_limited_as_resource_exhaustd: true } }`),
      ),
    );
    assert.ok(
      rl.some((e) => e.includes("unknown field 'rate_limited_as_resource_exhaustd'")),
      rl.join('\n'),
    );
  });
});
