/**
 * A route's mirror policies, compiled: each spelling (v3's list, v2's single policy, a
 * cluster or a cluster header), the share a policy mirrors, refusals by name; and the host a
 * copy carries.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Report } from '../../../src/bootstrap/report.js';
import { compileMirrorPolicies, shadowAuthority } from '../../../src/dataplane/router/mirror.js';
import { errorsOf, loadYaml } from '../../helpers/bootstrap.js';

describe('compileMirrorPolicies', () => {
  it('reads a cluster, a cluster header, a share, the suffix switch, and v2 single policy', () => {
    const report = new Report('test');
    const policies = compileMirrorPolicies(
      {
        request_mirror_policy: { cluster: 'old' },
        request_mirror_policies: [
          { cluster: 'a' },
          {
            cluster_header: 'X-Mirror',
            runtime_fraction: {
              default_value: { numerator: 5, denominator: 'TEN_THOUSAND' },
              runtime_key: 'k',
            },
            disable_shadow_host_suffix_append: true,
          },
        ],
      },
      'r',
      report,
    );
    assert.deepEqual(report.problems, []);
    assert.deepEqual(policies, [
      {
        cluster: 'old',
        clusterHeader: null,
        fraction: { key: '', numerator: 100, denominator: 100 },
        suffix: true,
      },
      {
        cluster: 'a',
        clusterHeader: null,
        fraction: { key: '', numerator: 100, denominator: 100 },
        suffix: true,
      },
      {
        cluster: null,
        clusterHeader: 'x-mirror',
        fraction: { key: 'k', numerator: 5, denominator: 10_000 },
        suffix: false,
      },
    ]);
    assert.equal(compileMirrorPolicies({}, 'r', report), null);
  });

  it('refuses a policy with both or neither of cluster and cluster_header, and runtime_key by name', () => {
    const yaml = (policy: string) =>
      `static_resources: { listeners: [{ name: l, address: { socket_address: { address: 127.0.0.1, port_value: 0 } }, filter_chains: [{ filters: [{ name: envoy.filters.network.http_connection_manager, typed_config: { '@type': type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager, stat_prefix: s, route_config: { validate_clusters: false, virtual_hosts: [{ name: v, domains: ['*'], routes: [{ match: { prefix: / }, route: { cluster: c, request_mirror_policies: [${policy}] } }] }] }, http_filters: [{ name: envoy.filters.http.router }] } }] }] }] }`;
    const at = 'virtual_hosts[0].routes[0].route.request_mirror_policies[0]';
    assert.match(
      errorsOf(loadYaml(yaml('{ cluster: a, cluster_header: b }'))).join('\n'),
      new RegExp(`${at.replace(/[[\].]/g, '\\$&')}: exactly one of cluster or cluster_header`),
    );
    assert.match(
      errorsOf(loadYaml(yaml('{ runtime_fraction: { default_value: { numerator: 1 } } }'))).join('\n'),
      /exactly one of cluster or cluster_header/,
    );
    const v2 = `static_resources: { listeners: [{ name: l, address: { socket_address: { address: 127.0.0.1, port_value: 0 } }, filter_chains: [{ filters: [{ name: envoy.http_connection_manager, config: { stat_prefix: s, route_config: { validate_clusters: false, virtual_hosts: [{ name: v, domains: ['*'], routes: [{ match: { prefix: / }, route: { cluster: c, request_mirror_policy: { cluster: m, runtime_key: k } } }] }] }, http_filters: [{ name: envoy.router }] } }] }] }] }`;
    assert.match(
      errorsOf(loadYaml(v2)).join('\n'),
      /request_mirror_policy\.runtime_key: the mirror policy runtime_key \(v2; write runtime_fraction\) is not implemented/,
    );
  });

  it('finds a mirror cluster the proxy lacks, with validate_clusters on', () => {
    const yaml = `static_resources: { clusters: [{ name: c, connect_timeout: 1s, load_assignment: { cluster_name: c, endpoints: [{ lb_endpoints: [{ endpoint: { address: { socket_address: { address: 127.0.0.1, port_value: 1 } } } }] }] } }], listeners: [{ name: l, address: { socket_address: { address: 127.0.0.1, port_value: 0 } }, filter_chains: [{ filters: [{ name: envoy.filters.network.http_connection_manager, typed_config: { '@type': type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager, stat_prefix: s, route_config: { virtual_hosts: [{ name: v, domains: ['*'], routes: [{ match: { prefix: / }, route: { cluster: c, request_mirror_policies: [{ cluster: nowhere }] } }] }] }, http_filters: [{ name: envoy.filters.http.router }] } }] }] }] }`;
    assert.match(
      errorsOf(loadYaml(yaml)).join('\n'),
      /request_mirror_policies\[0\]\.cluster: route: mirror cluster 'nowhere' is not a known cluster/,
    );
  });
});

describe('shadowAuthority', () => {
  it('appends -shadow to the host name, before a port, outside IPv6 brackets', () => {
    assert.equal(shadowAuthority('service1'), 'service1-shadow');
    assert.equal(shadowAuthority('service1:8080'), 'service1-shadow:8080');
    assert.equal(shadowAuthority('[::1]:80'), '[::1]-shadow:80');
    assert.equal(shadowAuthority('[::1]'), '[::1]-shadow');
  });
});
