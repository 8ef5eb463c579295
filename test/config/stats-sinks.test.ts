/**
 * The compile step of the sinks that send (`compileStatsSinks`): the statsd and DogStatsD
 * sinks found by every name and type URL the reference accepts, their fields read, and each
 * bad or unserved field refused by its path, the same at `--mode validate` as at serve.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { JsonObject } from '../../events/index.js';
import { Report } from '../../src/bootstrap/report.js';
import { compileStatsSinks } from '../../src/config/stats-sinks.js';
import { bootstrapOf, errorsOf, loadYaml } from '../helpers/bootstrap.js';

const UDP = 'address: { socket_address: { address: 127.0.0.1, port_value: 8125 } }';

function sinksOf(yaml: string) {
  const bootstrap = bootstrapOf(loadYaml(yaml)) as unknown as JsonObject;
  const report = new Report('test');
  const sinks = compileStatsSinks(bootstrap, report);
  assert.equal(report.failed, false);
  return sinks;
}

describe('stats_sinks: statsd and dog_statsd', () => {
  it('finds the statsd sink by every name and type URL: v2, v3, TypedStruct', () => {
    const cases: Array<[string, string]> = [
      ['envoy.stat_sinks.statsd', '"@type": type.googleapis.com/envoy.config.metrics.v3.StatsdSink'],
      ['envoy.statsd', '"@type": type.googleapis.com/envoy.config.metrics.v2.StatsdSink'],
      ['proxy.stat_sinks.statsd', '"@type": type.googleapis.com/envoy.config.metrics.v3.StatsdSink'],
    ];
    for (const [name, type] of cases) {
      const sinks = sinksOf(`
stats_sinks:
  - name: ${name}
    typed_config: { ${type}, ${UDP} }
`);
      assert.deepEqual(
        sinks,
        [
          {
            kind: 'statsd',
            target: { kind: 'udp', ip: '127.0.0.1', port: 8125 },
            prefix: 'envoy',
            tagged: false,
            maxDatagramBytes: 0,
          },
        ],
        name,
      );
    }
    const typedStruct = sinksOf(`
stats_sinks:
  - name: envoy.stat_sinks.dog_statsd
    typed_config:
      "@type": type.googleapis.com/udpa.type.v1.TypedStruct
      type_url: type.googleapis.com/envoy.config.metrics.v3.DogStatsdSink
      value: { ${UDP}, prefix: mesh, max_bytes_per_datagram: 512 }
`);
    assert.deepEqual(typedStruct, [
      {
        kind: 'statsd',
        target: { kind: 'udp', ip: '127.0.0.1', port: 8125 },
        prefix: 'mesh',
        tagged: true,
        maxDatagramBytes: 512,
      },
    ]);
  });

  it('tcp_cluster_name names a static cluster', () => {
    const sinks = sinksOf(`
static_resources:
  clusters:
    - name: statsd
      connect_timeout: 1s
      load_assignment: { cluster_name: statsd, endpoints: [{ lb_endpoints: [{ endpoint: { ${UDP} } }] }] }
stats_sinks:
  - name: envoy.statsd
    typed_config: { "@type": type.googleapis.com/envoy.config.metrics.v3.StatsdSink, tcp_cluster_name: statsd }
`);
    assert.deepEqual(sinks[0]?.kind === 'statsd' && sinks[0].target, { kind: 'tcp', cluster: 'statsd' });
  });

  it('refuses each bad or unserved field by its path', () => {
    const errors = errorsOf(
      loadYaml(`
static_resources:
  clusters:
    - name: tls
      connect_timeout: 1s
      transport_socket: { name: envoy.transport_sockets.tls, typed_config: { "@type": type.googleapis.com/envoy.api.v2.auth.UpstreamTlsContext } }
      load_assignment: { cluster_name: tls, endpoints: [{ lb_endpoints: [{ endpoint: { ${UDP} } }] }] }
stats_sinks:
  - name: envoy.statsd
    typed_config: { "@type": type.googleapis.com/envoy.config.metrics.v3.StatsdSink }
  - name: envoy.statsd
    typed_config: { "@type": type.googleapis.com/envoy.config.metrics.v3.StatsdSink, tcp_cluster_name: nowhere }
  - name: envoy.statsd
    typed_config: { "@type": type.googleapis.com/envoy.config.metrics.v3.StatsdSink, tcp_cluster_name: tls }
  - name: envoy.statsd
    typed_config:
      "@type": type.googleapis.com/envoy.config.metrics.v3.StatsdSink
      address: { socket_address: { address: statsd.local, port_value: 0 } }
  - name: envoy.dog_statsd
    typed_config:
      "@type": type.googleapis.com/envoy.config.metrics.v3.DogStatsdSink
      address: { pipe: { path: /run/statsd.sock } }
      max_bytes_per_datagram: 0
`),
    ).join('\n');
    for (const expected of [
      /stats_sinks\[0\]\.typed_config\.address: required: address \(UDP\) or tcp_cluster_name \(TCP\)/,
      /stats_sinks\[1\]\.typed_config\.tcp_cluster_name: unknown cluster 'nowhere'/,
      /stats_sinks\[2\]\.typed_config\.tcp_cluster_name: TLS to a tcp statsd cluster/,
      /stats_sinks\[3\]\.typed_config\.address\.socket_address\.address: malformed IP address: statsd\.local/,
      /stats_sinks\[3\]\.typed_config\.address\.socket_address\.port_value: 0 is not a port/,
      /stats_sinks\[4\]\.typed_config\.address\.pipe: a stats sink to a unix datagram socket \(pipe\) is not implemented/,
      /stats_sinks\[4\]\.typed_config\.max_bytes_per_datagram: must be greater than 0/,
    ])
      assert.match(errors, expected);
  });

  it('malformed values never throw', () => {
    for (const sinks of ['no list', [null, 3, { typed_config: [] }], [{ typed_config: { '@type': 7 } }]]) {
      const report = new Report('test');
      assert.deepEqual(compileStatsSinks({ stats_sinks: sinks } as JsonObject, report), []);
    }
  });
});

describe('stats_sinks: metrics_service', () => {
  it('finds it by every name and type URL, with its options and their defaults', () => {
    const cases: Array<[string, string]> = [
      ['envoy.stat_sinks.metrics_service', 'envoy.config.metrics.v3.MetricsServiceConfig'],
      ['envoy.metrics_service', 'envoy.config.metrics.v2.MetricsServiceConfig'],
      ['proxy.stat_sinks.metrics_service', 'envoy.config.metrics.v3.MetricsServiceConfig'],
    ];
    for (const [name, type] of cases) {
      const sinks = sinksOf(`
static_resources:
  clusters:
    - name: ms
      connect_timeout: 1s
      load_assignment: { cluster_name: ms, endpoints: [{ lb_endpoints: [{ endpoint: { ${UDP} } }] }] }
stats_sinks:
  - name: ${name}
    typed_config:
      "@type": type.googleapis.com/${type}
      grpc_service: { envoy_grpc: { cluster_name: ms }, initial_metadata: [{ key: X-Token, value: t }] }
`);
      assert.deepEqual(
        sinks,
        [
          {
            kind: 'metrics_service',
            service: { kind: 'cluster', cluster: 'ms' },
            metadata: [['x-token', 't']],
            transport: 'V2',
            countersAsDeltas: false,
            labels: false,
            summary: true,
            histogram: true,
            batchSize: 0,
          },
        ],
        name,
      );
    }
    const typed = sinksOf(`
stats_sinks:
  - name: envoy.stat_sinks.metrics_service
    typed_config:
      "@type": type.googleapis.com/udpa.type.v1.TypedStruct
      type_url: type.googleapis.com/envoy.config.metrics.v3.MetricsServiceConfig
      value:
        grpc_service: { google_grpc: { target_uri: "unix:/run/ms.sock", stat_prefix: ms } }
        transport_api_version: V3
        report_counters_as_deltas: true
        emit_tags_as_labels: true
        histogram_emit_mode: HISTOGRAM
        batch_size: 100
`);
    assert.deepEqual(typed[0], {
      kind: 'metrics_service',
      service: { kind: 'target', target: 'unix:/run/ms.sock' },
      metadata: [],
      transport: 'V3',
      countersAsDeltas: true,
      labels: true,
      summary: false,
      histogram: true,
      batchSize: 100,
    });
  });

  it('refuses each bad or unserved field by its path', () => {
    const errors = errorsOf(
      loadYaml(`
static_resources:
  clusters:
    - name: tls
      connect_timeout: 1s
      transport_socket: { name: envoy.transport_sockets.tls, typed_config: { "@type": type.googleapis.com/envoy.api.v2.auth.UpstreamTlsContext } }
      load_assignment: { cluster_name: tls, endpoints: [{ lb_endpoints: [{ endpoint: { ${UDP} } }] }] }
stats_sinks:
  - name: envoy.metrics_service
    typed_config: { "@type": type.googleapis.com/envoy.config.metrics.v3.MetricsServiceConfig }
  - name: envoy.metrics_service
    typed_config:
      "@type": type.googleapis.com/envoy.config.metrics.v3.MetricsServiceConfig
      grpc_service: { envoy_grpc: { cluster_name: nowhere } }
  - name: envoy.metrics_service
    typed_config:
      "@type": type.googleapis.com/envoy.config.metrics.v3.MetricsServiceConfig
      grpc_service: { envoy_grpc: { cluster_name: tls } }
  - name: envoy.metrics_service
    typed_config:
      "@type": type.googleapis.com/envoy.config.metrics.v3.MetricsServiceConfig
      grpc_service: { google_grpc: { stat_prefix: ms, channel_credentials: { ssl_credentials: {} } } }
  - name: envoy.metrics_service
    typed_config:
      "@type": type.googleapis.com/envoy.config.metrics.v3.MetricsServiceConfig
      grpc_service: { envoy_grpc: {} }
`),
    ).join('\n');
    for (const expected of [
      /stats_sinks\[0\]\.typed_config\.grpc_service: required field missing/,
      /stats_sinks\[1\]\.typed_config\.grpc_service\.envoy_grpc\.cluster_name: unknown cluster 'nowhere'/,
      /stats_sinks\[3\]\.typed_config\.grpc_service\.google_grpc\.channel_credentials: unknown field/,
      /stats_sinks\[4\]\.typed_config\.grpc_service\.envoy_grpc\.cluster_name: required field missing/,
    ])
      assert.match(errors, expected);
    // a cluster with TLS is dialled with it, as a management server's
    assert.doesNotMatch(errors, /stats_sinks\[2\]/);
  });
});
