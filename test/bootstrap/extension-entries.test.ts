/**
 * A route's `per_filter_config` Structs, read by the loader as the message of the HTTP filter
 * each key names (src/bootstrap/extension-entries.ts picks it, canonical.ts reads it), so no
 * filter's compile step calls the loader. The first config is the per-route example of the
 * reference's ext_authz docs (v1.12), which wrote the overrides as Structs.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { JsonObject } from '../../events/index.js';
import { perFilterConfigType } from '../../src/bootstrap/extension-entries.js';
import { bootstrapOf, errorsOf, loadYaml } from '../helpers/bootstrap.js';

const EXT_AUTHZ_PER_ROUTE = 'type.googleapis.com/envoy.config.filter.http.ext_authz.v2.ExtAuthzPerRoute';

/** A bootstrap whose one listener's connection manager has `virtualHost` and an ext_authz and RBAC filter. */
const bootstrap = (virtualHost: string) => `
static_resources:
  clusters:
  - { name: ext-authz, connect_timeout: 1s, type: STATIC, http2_protocol_options: {}, load_assignment: { cluster_name: ext-authz, endpoints: [{ lb_endpoints: [{ endpoint: { address: { socket_address: { address: 127.0.0.1, port_value: 10003 } } } }] }] } }
  - { name: some_service, connect_timeout: 1s, type: STATIC, load_assignment: { cluster_name: some_service, endpoints: [{ lb_endpoints: [{ endpoint: { address: { socket_address: { address: 127.0.0.1, port_value: 10004 } } } }] }] } }
  listeners:
  - address: { socket_address: { address: 127.0.0.1, port_value: 0 } }
    filter_chains:
    - filters:
      - name: envoy.http_connection_manager
        config:
          stat_prefix: ingress
          http_filters:
          - name: envoy.ext_authz
            config: { grpc_service: { envoy_grpc: { cluster_name: ext-authz }, timeout: 0.5s } }
          - name: envoy.filters.http.rbac
            config: { rules: { action: ALLOW } }
          - name: envoy.router
          route_config:
            virtual_hosts:
${virtualHost}
`;

/** The v1.12 ext_authz docs' per-route overrides, and an RBAC one by its `proxy.` name. */
const EXAMPLE = `
            - name: local_service
              domains: ["*"]
              per_filter_config:
                envoy.ext_authz:
                  check_settings:
                    context_extensions:
                      virtual_host: local_service
              routes:
              - match: { prefix: "/static" }
                route: { cluster: some_service }
                per_filter_config:
                  envoy.ext_authz:
                    disabled: true
              - match: { prefix: "/" }
                route: { cluster: some_service }
                per_filter_config:
                  proxy.filters.http.rbac: { rbac: { rules: { action: DENY } } }`;

/** Where findings under the connection manager point: its `config`, as the bootstrap writes it. */
const HCM_AT = 'static_resources.listeners[0].filter_chains[0].filters[0].config';

/** The canonical first virtual host of a loaded `bootstrap`. */
function virtualHostOf(yaml: string): JsonObject {
  const b = bootstrapOf(loadYaml(yaml)) as unknown as {
    static_resources: {
      listeners: Array<{ filter_chains: Array<{ filters: Array<{ typed_config: JsonObject }> }> }>;
    };
  };
  const hcm = b.static_resources.listeners[0]?.filter_chains[0]?.filters[0]?.typed_config as {
    route_config: { virtual_hosts: JsonObject[] };
  };
  return hcm.route_config.virtual_hosts[0] as JsonObject;
}

describe("a route's per_filter_config, read by the loader", () => {
  it("reads each Struct as the message its key's filter reads, with that @type, on virtual hosts and routes", () => {
    const vh = virtualHostOf(bootstrap(EXAMPLE));
    assert.deepEqual(vh.per_filter_config, {
      'envoy.ext_authz': {
        '@type': EXT_AUTHZ_PER_ROUTE,
        check_settings: { context_extensions: { virtual_host: 'local_service' } },
      },
    });
    const routes = vh.routes as Array<{ per_filter_config?: JsonObject }>;
    assert.deepEqual(routes[0]?.per_filter_config, {
      'envoy.ext_authz': { '@type': EXT_AUTHZ_PER_ROUTE, disabled: true },
    });
    assert.deepEqual(routes[1]?.per_filter_config, {
      'proxy.filters.http.rbac': {
        '@type': 'type.googleapis.com/envoy.config.filter.http.rbac.v2.RBACPerRoute',
        rbac: { rules: { action: 'DENY' } },
      },
    });
  });

  it('reads its own canonical form again unchanged', () => {
    // Root cause: the entries it writes carry `@type`, which a Struct read as the filter's
    // message refused as an unknown field, so a worker or a test re-reading the canonical
    // bootstrap failed to load it.
    const first = bootstrapOf(loadYaml(bootstrap(EXAMPLE)));
    const second = loadYaml(JSON.stringify(first));
    assert.deepEqual(bootstrapOf(second), first);
  });

  it('names a bad field under the entry as the loader names map entries', () => {
    const errors = errorsOf(
      loadYaml(
        bootstrap(`
            - name: v
              domains: ["*"]
              routes:
              - match: { prefix: "/" }
                route: { cluster: some_service }
                per_filter_config:
                  envoy.ext_authz: { disabled: true, bogus: 1 }
                  envoy.filters.http.rbac: [1]`),
      ),
    );
    const at = `${HCM_AT}.route_config.virtual_hosts[0].routes[0].per_filter_config`;
    assert.ok(
      errors.some((e) => e.includes(`${at}["envoy.ext_authz"].bogus: unknown field 'bogus'`)),
      errors.join('\n'),
    );
    assert.ok(
      errors.some((e) => e.includes(`${at}["envoy.filters.http.rbac"]: expected an object (Struct)`)),
      errors.join('\n'),
    );
    assert.equal(errors.filter((e) => e.includes('envoy.filters.http.rbac')).length, 1, errors.join('\n'));
  });

  it("leaves a key naming no HTTP filter to the route's compile step, which refuses it by name", () => {
    const errors = errorsOf(
      loadYaml(
        bootstrap(`
            - name: v
              domains: ["*"]
              per_filter_config: { __proto__: { a: 1 }, envoy.nope: { b: 2 } }
              routes: [{ match: { prefix: "/" }, route: { cluster: some_service } }]`),
      ),
    );
    const at = `${HCM_AT}.route_config.virtual_hosts[0].per_filter_config`;
    for (const key of ['__proto__', 'envoy.nope'])
      assert.ok(
        errors.some((e) => e.includes(`${at}["${key}"]: '${key}' is not an HTTP filter of this build`)),
        errors.join('\n'),
      );
  });

  it('picks the per-route message where the filter has one, else its config, by any name', () => {
    assert.equal(
      perFilterConfigType('envoy.ext_authz'),
      'envoy.config.filter.http.ext_authz.v2.ExtAuthzPerRoute',
    );
    assert.equal(
      perFilterConfigType('proxy.filters.http.csrf'),
      'envoy.config.filter.http.csrf.v2.CsrfPolicy',
    );
    assert.equal(perFilterConfigType('envoy.fault'), 'envoy.config.filter.http.fault.v2.HTTPFault');
    assert.equal(perFilterConfigType('envoy.tcp_proxy'), undefined, 'a network filter is no HTTP filter');
    assert.equal(perFilterConfigType('lua_filter_with_custom_name_1'), undefined);
  });
});
