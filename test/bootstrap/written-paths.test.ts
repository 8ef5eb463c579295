/**
 * A filter config written as the deprecated v2 `config` Struct is turned into `typed_config`
 * by the loader, but the compile steps' findings must still name the field the user wrote,
 * and a config the loader refused must not come back as follow-on errors.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { errorsOf, loadYaml } from '../helpers/bootstrap.js';

const LISTENER = 'static_resources.listeners[0].filter_chains[0].filters[0]';

function listener(filter: string): string {
  return `static_resources: { listeners: [{ name: l, address: { socket_address: { address: 127.0.0.1, port_value: 0 } }, filter_chains: [{ filters: [${filter}] }] }] }`;
}

const ROUTES = `route_config: { virtual_hosts: [{ name: v, domains: ['*'], routes: [{ match: { prefix: / }, direct_response: { status: 200 } }] }] }`;

describe('compile findings under a deprecated config', () => {
  it('name config, not typed_config, for the HCM and for an HTTP filter inside it', () => {
    const result = loadYaml(
      listener(
        `{ name: envoy.http_connection_manager, config: { stat_prefix: s, proxy_100_continue: true, ${ROUTES}, http_filters: [{ name: envoy.router, config: { start_child_span: true } }] } }`,
      ),
    );
    const errors = errorsOf(result);
    assert.deepEqual(
      errors.map((e) => e.split(': ')[1]),
      [`${LISTENER}.config.proxy_100_continue`],
      errors.join('\n'),
    );
    assert.ok(
      result.warnings.some((w) => w.includes(`${LISTENER}.config.http_filters[0].config.start_child_span: `)),
      result.warnings.join('\n'),
    );
  });

  it('keep typed_config where the input wrote typed_config', () => {
    const errors = errorsOf(
      loadYaml(
        listener(
          `{ name: envoy.http_connection_manager, typed_config: { '@type': type.googleapis.com/envoy.config.filter.network.http_connection_manager.v2.HttpConnectionManager, stat_prefix: s, proxy_100_continue: true, ${ROUTES} } }`,
        ),
      ),
    );
    assert.deepEqual(
      errors.map((e) => e.split(': ')[1]),
      [`${LISTENER}.typed_config.proxy_100_continue`],
    );
  });

  it('drop the echo of a v1 config the loader refused (no stat_prefix or route errors for it)', () => {
    const errors = errorsOf(
      loadYaml(
        listener(
          `{ name: envoy.http_connection_manager, config: { deprecated_v1: true, value: { stat_prefix: s } } }`,
        ),
      ),
    );
    assert.deepEqual(
      errors.map((e) => e.split(': ')[1]),
      [`${LISTENER}.config.deprecated_v1`],
      errors.join('\n'),
    );
  });
});
