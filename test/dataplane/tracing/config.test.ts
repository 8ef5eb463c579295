import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { load } from '../../helpers/bootstrap.js';

const ZIPKIN = 'type.googleapis.com/envoy.config.trace.v2.ZipkinConfig';
const CLUSTERS = `clusters: [{ name: zipkin, load_assignment: { cluster_name: zipkin, endpoints: [{ lb_endpoints: [{ endpoint: { address: { socket_address: { address: 127.0.0.1, port_value: 9411 } } } }] }] } }]`;

/** A bootstrap with one HCM whose `tracing` is `tracing`, its route decorated with `decorator`. */
function yaml(tracing: string, extra = '', decorator = '{ operation: op }'): string {
  const hcm = `{ name: envoy.http_connection_manager, typed_config: { '@type': type.googleapis.com/envoy.config.filter.network.http_connection_manager.v2.HttpConnectionManager, stat_prefix: in, tracing: ${tracing}, route_config: { virtual_hosts: [{ name: all, domains: ['*'], routes: [{ match: { prefix: / }, direct_response: { status: 200 }, decorator: ${decorator} }] }] }, http_filters: [{ name: envoy.router }] } }`;
  return `static_resources: { ${CLUSTERS}, listeners: [{ name: l, address: { socket_address: { address: 127.0.0.1, port_value: 0 } }, filter_chains: [{ filters: [${hcm}] }] }] }${extra}`;
}

const provider = (body: string, name = 'envoy.tracers.zipkin') =>
  `{ provider: { name: ${name}, typed_config: { '@type': ${ZIPKIN}, collector_cluster: zipkin, collector_endpoint: /api/v2/spans${body} } } }`;

function errors(configYaml: string): string[] {
  const loaded = load({ configYaml });
  return loaded.ok ? [] : loaded.errors;
}

describe('tracing config', () => {
  it('accepts every spelling of the Zipkin tracer, the @type alone and the deprecated config Struct', () => {
    for (const name of ['envoy.zipkin', 'envoy.tracers.zipkin', 'proxy.zipkin', 'proxy.tracers.zipkin'])
      assert.deepEqual(errors(yaml(provider(', collector_endpoint_version: HTTP_JSON', name))), [], name);
    const typeOnly = `{ provider: { typed_config: { '@type': ${ZIPKIN}, collector_cluster: zipkin, collector_endpoint: /s, collector_endpoint_version: HTTP_JSON } } }`;
    assert.deepEqual(errors(yaml(typeOnly)), []);
    const struct =
      '{ provider: { name: envoy.zipkin, config: { collector_cluster: zipkin, collector_endpoint: /s, collector_endpoint_version: HTTP_JSON } } }';
    assert.deepEqual(errors(yaml(struct)), []);
  });

  it('refuses by name the encodings it does not send; JSON v1, the v2 default, is sent', () => {
    const proto = errors(yaml(provider(', collector_endpoint_version: HTTP_PROTO')));
    assert.match(
      proto.join('\n'),
      /provider\.typed_config\.collector_endpoint_version: HTTP_PROTO is not implemented/,
    );
    assert.match(
      errors(yaml(provider(', collector_endpoint_version: GRPC'))).join('\n'),
      /collector_endpoint_version: GRPC is not implemented/,
    );
    assert.deepEqual(errors(yaml(provider(''))), [], 'unset: JSON v1');
    assert.deepEqual(errors(yaml(provider(', collector_endpoint_version: HTTP_JSON_V1'))), []);
  });

  it('refuses custom_tags, another tracer, a decorator without operation, decorator propagate', () => {
    assert.match(
      errors(yaml(`{ custom_tags: [{ tag: a, literal: { value: b } }] }`)).join('\n'),
      /tracing\.custom_tags: tracing custom_tags is not implemented/,
    );
    assert.match(
      errors(yaml('{ provider: { name: envoy.tracers.dynamic_ot } }')).join('\n'),
      /provider\.name: unknown extension 'envoy\.tracers\.dynamic_ot'/,
    );
    assert.match(errors(yaml('{}', '', '{}')).join('\n'), /decorator\.operation: required field missing/);
    assert.match(
      errors(yaml('{}', '', '{ operation: a, propagate: false }')).join('\n'),
      /decorator\.propagate: /,
    );
  });

  it("checks the bootstrap tracer's collector cluster and the sampling percentages", () => {
    const bootstrapTracer = (cluster: string) =>
      `\ntracing: { http: { name: envoy.zipkin, typed_config: { '@type': ${ZIPKIN}, collector_cluster: ${cluster}, collector_endpoint: /s, collector_endpoint_version: HTTP_JSON } } }`;
    assert.deepEqual(
      errors(yaml('{ operation_name: EGRESS, verbose: true }', bootstrapTracer('zipkin'))),
      [],
    );
    assert.match(
      errors(yaml('{}', bootstrapTracer('nowhere'))).join('\n'),
      /tracing\.http\.typed_config\.collector_cluster: unknown cluster 'nowhere'/,
    );
    assert.match(
      errors(yaml('{ random_sampling: { value: 101 } }')).join('\n'),
      /tracing\.random_sampling\.value: a percentage from 0 to 100, got 101/,
    );
  });
});
