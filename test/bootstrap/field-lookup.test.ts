/**
 * A v2 field v3 removed, written in a v3 message, is refused naming it as v2. Root cause: the
 * loader reads a v3 message as its v2 one, where such a field (one v2 deprecated, as v3
 * removed all of them but a few deprecated later in both) still exists, so `idle_timeout` in a v3 HttpConnectionManager or `config` on a v3 HttpFilter
 * passed with a warning about a v2 message, where the reference refuses the field as unknown.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { bootstrapOf, type Dump, errorsOf, loadYaml } from '../helpers/bootstrap.js';

const HCM = {
  v3: 'type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager',
  v2: 'type.googleapis.com/envoy.config.filter.network.http_connection_manager.v2.HttpConnectionManager',
};
const ROUTES = `route_config: { virtual_hosts: [{ name: v, domains: ['*'], routes: [{ match: { prefix: / }, direct_response: { status: 200 } }] }] }`;
const AT = 'static_resources.listeners[0].filter_chains[0].filters[0].typed_config';

/** A listener whose connection manager, of the version `type` names, has `extra` fields. */
function hcm(type: string, extra: string): string {
  return `static_resources: { listeners: [{ name: l, address: { socket_address: { address: 127.0.0.1, port_value: 0 } }, filter_chains: [{ filters: [{ name: envoy.filters.network.http_connection_manager, typed_config: { "@type": ${type}, stat_prefix: s, ${ROUTES}, ${extra} } }] }] }] }`;
}

const ROUTER = 'http_filters: [{ name: envoy.filters.http.router }]';

describe('a v2 field v3 removed, in a v3 message', () => {
  it('is refused naming the v3 message, the v2 one, and what v3 writes instead', () => {
    const errors = errorsOf(loadYaml(hcm(HCM.v3, `idle_timeout: 10s, ${ROUTER}`)));
    assert.deepEqual(errors, [
      `--config-yaml: ${AT}.idle_timeout: unknown field 'idle_timeout' in envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager (read as envoy.config.filter.network.http_connection_manager.v2.HttpConnectionManager): 'idle_timeout' is a v2 field v3 removed; v3 writes common_http_protocol_options.idle_timeout (write it as v3 does, or pass --allow-unknown-static-fields to ignore it)`,
    ]);
  });

  it("refuses a filter's v2 config Struct, one error and no echo from the filter's compile step", () => {
    const errors = errorsOf(
      loadYaml(hcm(HCM.v3, 'http_filters: [{ name: envoy.filters.http.router, config: {} }]')),
    );
    assert.equal(errors.length, 1, errors.join('\n'));
    assert.match(
      errors[0] ?? '',
      /http_filters\[0\]\.config: unknown field 'config' in envoy\.extensions\.filters\.network\.http_connection_manager\.v3\.HttpFilter .*'config' is a v2 field v3 removed; v3 writes typed_config/,
    );
  });

  it('says only that v3 removed it where the v2 protos name no replacement', () => {
    const errors = errorsOf(loadYaml(hcm(HCM.v3, `tracing: { operation_name: EGRESS }, ${ROUTER}`)));
    assert.equal(errors.length, 1, errors.join('\n'));
    assert.match(
      errors[0] ?? '',
      /tracing\.operation_name: .*'operation_name' is a v2 field v3 removed \(write it as v3 does/,
    );
  });

  it('is ignored with a warning under --allow-unknown-static-fields, as any unknown field', () => {
    const result = loadYaml(hcm(HCM.v3, `idle_timeout: 10s, ${ROUTER}`), { allowUnknownStaticFields: true });
    const loaded: Dump = bootstrapOf(result);
    assert.equal(
      loaded.static_resources.listeners[0].filter_chains[0].filters[0].typed_config.idle_timeout,
      undefined,
    );
    assert.ok(result.ok && result.unknownFields === 1);
    assert.ok(
      result.ok && result.warnings.some((w) => w.includes("'idle_timeout' is a v2 field v3 removed")),
    );
  });

  it('keeps the few fields v2 deprecated and v3 kept: RBAC source_ip', () => {
    const rbac = `{ name: envoy.filters.network.rbac, typed_config: { "@type": type.googleapis.com/envoy.extensions.filters.network.rbac.v3.RBAC, stat_prefix: r, rules: { action: ALLOW, policies: { p: { permissions: [{ any: true }], principals: [{ source_ip: { address_prefix: 127.0.0.1, prefix_len: 32 } }] } } } } }`;
    const yaml = `static_resources: { listeners: [{ name: l, address: { socket_address: { address: 127.0.0.1, port_value: 0 } }, filter_chains: [{ filters: [${rbac}, { name: envoy.filters.network.tcp_proxy, typed_config: { "@type": type.googleapis.com/envoy.extensions.filters.network.tcp_proxy.v3.TcpProxy, stat_prefix: t, cluster: c } }] }] }], clusters: [{ name: c, connect_timeout: 1s, load_assignment: { cluster_name: c } }] }`;
    assert.ok(bootstrapOf(loadYaml(yaml)));
  });

  it('stays a deprecation warning in a v2 message', () => {
    const result = loadYaml(hcm(HCM.v2, `idle_timeout: 10s, ${ROUTER}`));
    assert.ok(bootstrapOf(result));
    assert.ok(
      result.ok &&
        result.warnings.some((w) => w.includes('using deprecated option') && w.includes('idle_timeout')),
      JSON.stringify(result),
    );
  });
});
