/**
 * A `typed_config` written without `@type`. Root cause of the old cascade: the walk dropped
 * the Any with a generic error, the extension was then filled in empty from its name, and
 * its compile step reported every required field as missing although the input had them.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { errorsOf, loadYaml } from '../helpers/bootstrap.js';

const ROUTES = `route_config: { virtual_hosts: [{ name: v, domains: ['*'], routes: [{ match: { prefix: / }, direct_response: { status: 200 } }] }] }`;
const listener = (filter: string) =>
  `static_resources: { listeners: [{ name: l, address: { socket_address: { address: 127.0.0.1, port_value: 0 } }, filter_chains: [{ filters: [${filter}] }] }] }`;
const AT = 'static_resources.listeners[0].filter_chains[0].filters[0].typed_config';

describe('typed_config without @type', () => {
  it('is one error saying which @type to add for the extension the name picks', () => {
    const errors = errorsOf(
      loadYaml(
        listener(`{ name: envoy.http_connection_manager, typed_config: { stat_prefix: s, ${ROUTES} } }`),
      ),
    );
    assert.deepEqual(errors, [
      `--config-yaml: ${AT}: missing "@type"; add "@type": "type.googleapis.com/envoy.config.filter.network.http_connection_manager.v2.HttpConnectionManager" (or the v3 "type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager")`,
    ]);
  });

  it('names the v3 type first inside a v3 message', () => {
    const errors = errorsOf(
      loadYaml(
        listener(
          `{ name: envoy.filters.network.http_connection_manager, typed_config: { "@type": type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager, stat_prefix: s, ${ROUTES}, http_filters: [{ name: envoy.filters.http.router }], access_log: [{ name: envoy.access_loggers.file, typed_config: { path: /dev/null } }] } }`,
        ),
      ),
    );
    assert.equal(errors.length, 1, errors.join('\n'));
    assert.ok(
      errors[0]?.endsWith(
        `${AT}.access_log[0].typed_config: missing "@type"; add "@type": "type.googleapis.com/envoy.extensions.access_loggers.file.v3.FileAccessLog" (or the v2 "type.googleapis.com/envoy.config.accesslog.v2.FileAccessLog")`,
      ),
      errors.join('\n'),
    );
  });

  it('for an extension this build lacks, asks for its config message and names the extension', () => {
    const errors = errorsOf(
      loadYaml(listener(`{ name: envoy.filters.network.redis_proxy, typed_config: { stat_prefix: s } }`)),
    );
    assert.ok(
      errors.some((e) =>
        e.includes(
          `${AT}: missing "@type"; add "@type" naming the config message of 'envoy.filters.network.redis_proxy'`,
        ),
      ),
      errors.join('\n'),
    );
    assert.ok(
      errors.some((e) => e.includes("unknown extension 'envoy.filters.network.redis_proxy'")),
      errors.join('\n'),
    );
  });

  it('keeps typed_config: {} as the extension defaults', () => {
    const errors = errorsOf(loadYaml(listener(`{ name: envoy.http_connection_manager, typed_config: {} }`)));
    assert.ok(
      errors.every((e) => !e.includes('@type')),
      errors.join('\n'),
    );
  });
});
