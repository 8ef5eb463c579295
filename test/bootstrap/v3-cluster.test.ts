/**
 * v3 bootstraps as the reference of the spec's era reads them: a cluster's HTTP settings in
 * `typed_extension_protocol_options` (lowered by src/bootstrap/v3-cluster.ts onto the v2
 * fields), v3 field spellings, v3 messages named in findings, the v3 access loggers.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { type Dump, errorsOf, bootstrapOf as loaded, loadYaml } from '../helpers/bootstrap.js';

const bootstrapOf = (result: Parameters<typeof loaded>[0]): Dump => loaded(result);

const OPTIONS = 'envoy.extensions.upstreams.http.v3.HttpProtocolOptions';
const ENDPOINTS = `load_assignment: { cluster_name: c, endpoints: [{ lb_endpoints: [{ endpoint: { address: { socket_address: { address: 127.0.0.1, port_value: 1 } } } }] }] }`;

function cluster(extra: string): string {
  return `static_resources: { clusters: [{ name: c, connect_timeout: 1s, ${ENDPOINTS}, ${extra} }] }`;
}

const typedOptions = (body: string) =>
  `typed_extension_protocol_options: { ${OPTIONS}: { "@type": type.googleapis.com/${OPTIONS}, ${body} } }`;

const HCM_V3 =
  'type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager';
function v3Route(route: string): string {
  return `static_resources: { listeners: [{ name: l, address: { socket_address: { address: 127.0.0.1, port_value: 0 } }, filter_chains: [{ filters: [{ name: envoy.filters.network.http_connection_manager, typed_config: { "@type": ${HCM_V3}, stat_prefix: s, http_filters: [{ name: envoy.filters.http.router }], route_config: { virtual_hosts: [{ name: v, domains: ['*'], routes: [{ match: { prefix: / }, route: { ${route} } }] }] } } }] }] }], ${cluster('').slice('static_resources: { '.length, -2)} }`;
}

describe('typed_extension_protocol_options with the v3 HttpProtocolOptions', () => {
  it('explicit_http_config.http2_protocol_options is the cluster http2_protocol_options', () => {
    const result = loadYaml(
      cluster(
        typedOptions(
          'common_http_protocol_options: { idle_timeout: 7s }, explicit_http_config: { http2_protocol_options: { max_concurrent_streams: 9 } }',
        ),
      ),
    );
    const c = bootstrapOf(result).static_resources.clusters[0];
    assert.deepEqual(c.http2_protocol_options, { max_concurrent_streams: 9 });
    assert.deepEqual(c.common_http_protocol_options, { idle_timeout: '7s' });
    assert.equal(c.typed_extension_protocol_options, undefined);
  });

  it('use_downstream_protocol_config selects the downstream protocol', () => {
    const c = bootstrapOf(
      loadYaml(cluster(typedOptions('use_downstream_protocol_config: { http2_protocol_options: {} }'))),
    ).static_resources.clusters[0];
    assert.equal(c.protocol_selection, 'USE_DOWNSTREAM_PROTOCOL');
    assert.deepEqual(c.http2_protocol_options, {});
  });

  it('refuses auto_config and a field set in both places, naming the field as written', () => {
    const at = `static_resources.clusters[0].typed_extension_protocol_options["${OPTIONS}"]`;
    assert.match(
      errorsOf(loadYaml(cluster(typedOptions('auto_config: {}')))).join('\n'),
      new RegExp(`${at.replace(/[[\].]/g, '\\$&')}\\.auto_config: auto_config .* is not implemented`),
    );
    const both = errorsOf(
      loadYaml(
        cluster(
          `http2_protocol_options: {}, ${typedOptions('explicit_http_config: { http2_protocol_options: {} }')}`,
        ),
      ),
    );
    assert.equal(both.length, 1, both.join('\n'));
    assert.ok(
      both[0]?.includes(
        `${at}.explicit_http_config.http2_protocol_options: the cluster sets http2_protocol_options too`,
      ),
    );
  });

  it('leaves other entries to be refused by name', () => {
    const errors = errorsOf(
      loadYaml(
        cluster(
          'typed_extension_protocol_options: { envoy.filters.network.thrift_proxy: { "@type": type.googleapis.com/google.protobuf.Struct, value: {} } }',
        ),
      ),
    );
    assert.match(
      errors.join('\n'),
      /clusters\[0\]\.typed_extension_protocol_options: Cluster\.typed_extension_protocol_options is not implemented/,
    );
  });
});

describe('v3 spellings and v3 messages in findings', () => {
  it('reads host_rewrite_literal as host_rewrite', () => {
    const route = bootstrapOf(loadYaml(v3Route('cluster: c, host_rewrite_literal: www.example.org')))
      .static_resources.listeners[0].filter_chains[0].filters[0].typed_config.route_config.virtual_hosts[0]
      .routes[0].route;
    assert.equal(route.host_rewrite, 'www.example.org');
  });

  it("reads a cluster's ignore_health_on_host_removal (Consul's bootstraps) as drain_connections_on_host_removal", () => {
    const c = bootstrapOf(loadYaml(cluster('ignore_health_on_host_removal: true'))).static_resources
      .clusters[0];
    assert.equal(c.drain_connections_on_host_removal, true);
  });

  it('refuses a renamed field this build lacks at its v3 path, naming its v2 spelling', () => {
    const errors = errorsOf(loadYaml(v3Route('cluster: c, host_rewrite_header: x-host')));
    assert.equal(errors.length, 1, errors.join('\n'));
    assert.match(
      errors[0] ?? '',
      /route\.host_rewrite_header: RouteAction\.auto_host_rewrite_header is not implemented/,
    );
  });

  it('refuses the v2 spelling in a v3 message, naming both, and names unknown fields in v3 terms', () => {
    const errors = errorsOf(loadYaml(v3Route('cluster: c, host_rewrite: a, host_rewrite_path_regex: {}')));
    assert.equal(errors.length, 2, errors.join('\n'));
    assert.match(
      errors[0] ?? '',
      /route\.host_rewrite: unknown field 'host_rewrite' in envoy\.config\.route\.v3\.RouteAction \(read as envoy\.api\.v2\.route\.RouteAction\): 'host_rewrite' is the v2 spelling, v3 writes 'host_rewrite_literal'/,
    );
    assert.match(
      errors[1] ?? '',
      /route\.host_rewrite_path_regex: unknown field 'host_rewrite_path_regex' in envoy\.config\.route\.v3\.RouteAction \(read as envoy\.api\.v2\.route\.RouteAction\) \(a field this build does not implement, or a misspelling; pass --allow-unknown-static-fields to ignore it\)$/,
    );
  });

  it('keeps reading the v2 spelling in a v2 message', () => {
    assert.ok(
      bootstrapOf(
        loadYaml(
          v3Route('cluster: c, host_rewrite: a').replace(
            HCM_V3,
            HCM_V3.replace(
              'extensions.filters.network.http_connection_manager.v3',
              'config.filter.network.http_connection_manager.v2',
            ),
          ),
        ),
      ).static_resources.listeners[0],
    );
  });
});

describe('the v3 access loggers', () => {
  const admin = (log: string) =>
    `admin: { address: { socket_address: { address: 127.0.0.1, port_value: 0 } }, access_log: [${log}] }`;

  it('accepts admin.access_log with the stdout, stderr and file loggers and their log_format', () => {
    const result = loadYaml(
      admin(
        `{ name: envoy.access_loggers.stdout, typed_config: { "@type": type.googleapis.com/envoy.extensions.access_loggers.stream.v3.StdoutAccessLog, log_format: { text_format: "%RESPONSE_CODE%\\n" } } },
         { name: envoy.access_loggers.stderr },
         { name: envoy.access_loggers.file, typed_config: { "@type": type.googleapis.com/envoy.extensions.access_loggers.file.v3.FileAccessLog, path: /dev/null, log_format: { json_format: { code: "%RESPONSE_CODE%" } } } }`,
      ),
    );
    assert.ok(bootstrapOf(result).admin.access_log.length === 3);
  });

  it('refuses omit_empty_values and a text_format_source from a file, by path', () => {
    const errors = errorsOf(
      loadYaml(
        admin(
          `{ name: envoy.access_loggers.stdout, typed_config: { "@type": type.googleapis.com/envoy.extensions.access_loggers.stream.v3.StdoutAccessLog, log_format: { text_format_source: { filename: /etc/format }, omit_empty_values: true } } }`,
        ),
      ),
    );
    const at = 'admin.access_log[0].typed_config.log_format';
    assert.ok(
      errors.some((e) => e.includes(`${at}.omit_empty_values: omit_empty_values is not implemented`)),
      errors.join('\n'),
    );
    assert.ok(
      errors.some((e) =>
        e.includes(`${at}.text_format_source.filename: DataSource.filename is not implemented`),
      ),
      errors.join('\n'),
    );
  });
});
