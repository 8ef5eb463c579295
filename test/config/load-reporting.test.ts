/**
 * `cluster_manager.load_stats_config` at load (`--mode validate` runs the same step): a gRPC
 * source on a static cluster acts; REST, a cluster that is not a static one, and what an xDS
 * source refuses are refused naming the field.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { loadStatsSourceOf } from '../../src/config/load-reporting.js';
import { bootstrapOf, errorsOf, loadYaml } from '../helpers/bootstrap.js';

const CLUSTERS = `static_resources: { clusters: [
  { name: lrs, type: STATIC, http2_protocol_options: {},
    load_assignment: { cluster_name: lrs, endpoints: [{ lb_endpoints: [{ endpoint: { address: { socket_address: { address: 127.0.0.1, port_value: 18000 } } } }] }] } },
  { name: eds, type: EDS, eds_cluster_config: { eds_config: { path: /dev/null } } } ] }`;

const withConfig = (config: string) => `${CLUSTERS}
cluster_manager: { load_stats_config: ${config} }`;

describe('cluster_manager.load_stats_config', () => {
  it('acts with api_type GRPC on a static cluster, in either transport version', () => {
    const v2 = bootstrapOf(
      loadYaml(withConfig('{ api_type: GRPC, grpc_services: { envoy_grpc: { cluster_name: lrs } } }')),
    );
    assert.deepEqual(loadStatsSourceOf(v2), {
      api: 'GRPC',
      cluster: 'lrs',
      transport: 'V2',
      delta: false,
      nodeOnFirstOnly: false,
      // rate_limit_settings is a discovery source's; a load-reporting source has none.
      rateLimit: null,
      metadata: [],
    });
    const v3 = bootstrapOf(
      loadYaml(
        withConfig(
          '{ api_type: GRPC, transport_api_version: V3, grpc_services: [{ envoy_grpc: { cluster_name: lrs } }] }',
        ),
      ),
    );
    assert.equal(loadStatsSourceOf(v3)?.transport, 'V3');
    assert.equal(loadStatsSourceOf(bootstrapOf(loadYaml(CLUSTERS))), null);
  });

  it('refuses REST, a cluster that is not a static one, and google_grpc, naming the field', () => {
    const rest = errorsOf(loadYaml(withConfig('{ api_type: REST, cluster_names: [lrs] }')));
    assert.ok(
      rest.some((e) => e.includes('cluster_manager.load_stats_config.api_type') && e.includes('GRPC')),
      rest.join('\n'),
    );
    // Load reports have one stream protocol: DELTA_GRPC is a discovery source's.
    const delta = errorsOf(
      loadYaml(withConfig('{ api_type: DELTA_GRPC, grpc_services: { envoy_grpc: { cluster_name: lrs } } }')),
    );
    assert.ok(
      delta.some((e) => e.includes('cluster_manager.load_stats_config.api_type') && e.includes('GRPC')),
      delta.join('\n'),
    );
    for (const cluster of ['eds', 'nowhere']) {
      const errors = errorsOf(
        loadYaml(
          withConfig(`{ api_type: GRPC, grpc_services: [{ envoy_grpc: { cluster_name: ${cluster} } }] }`),
        ),
      );
      assert.ok(
        errors.some((e) => e.includes('cluster_manager.load_stats_config') && e.includes(`'${cluster}'`)),
        errors.join('\n'),
      );
    }
    const google = errorsOf(
      loadYaml(withConfig("{ api_type: GRPC, grpc_services: [{ google_grpc: { target_uri: 'x:1' } }] }")),
    );
    assert.ok(
      google.some(
        (e) =>
          e.includes('cluster_manager.load_stats_config.grpc_services[0].google_grpc') &&
          e.includes('not supported by this build'),
      ),
      google.join('\n'),
    );
  });
});
