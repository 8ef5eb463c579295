/**
 * v3's typed `load_balancing_policy`, as Envoy Gateway writes it: the first policy this build
 * has is lowered onto `lb_policy` and the balancers' own fields (the compile step and the
 * data plane then read those), by its config's `@type` or its `envoy.`/`proxy.` name; what
 * no balancer here honours is refused by name, and so is a list with nothing this build has.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { JsonObject } from '../../events/index.js';
import { compiledCluster } from '../../src/config/cluster.js';
import { type Dump, load } from '../helpers/bootstrap.js';

const TYPE = 'type.googleapis.com/envoy.extensions.load_balancing_policies.';

const policy = (name: string, type: string | null, config: JsonObject = {}): JsonObject => ({
  typed_extension_config: {
    name,
    ...(type ? { typed_config: { '@type': `${TYPE}${type}`, ...config } } : {}),
  },
});

/** A bootstrap of one static cluster with `policies` (and `extra` fields), loaded. */
function loaded(policies: JsonObject[], extra: JsonObject = {}) {
  const cluster = {
    name: 'c',
    type: 'STATIC',
    load_balancing_policy: { policies },
    load_assignment: {
      cluster_name: 'c',
      endpoints: [
        {
          lb_endpoints: [
            { endpoint: { address: { socket_address: { address: '127.0.0.1', port_value: 1 } } } },
          ],
        },
      ],
    },
    ...extra,
  };
  const result = load({ configYaml: JSON.stringify({ static_resources: { clusters: [cluster] } }) });
  const errors = result.ok ? [] : result.errors;
  const lowered = result.ok ? ((result.bootstrap as Dump).static_resources.clusters[0] as JsonObject) : null;
  return { result, errors, lowered };
}

describe('load_balancing_policy (typed)', () => {
  it("lowers Envoy Gateway's least_request with its zone-aware locality config", () => {
    const { errors, lowered } = loaded([
      policy('envoy.load_balancing_policies.least_request', 'least_request.v3.LeastRequest', {
        choice_count: 3,
        locality_lb_config: { zone_aware_lb_config: { min_cluster_size: '1' } },
      }),
    ]);
    assert.deepEqual(errors, []);
    assert.ok(lowered);
    assert.equal(lowered.lb_policy, 'LEAST_REQUEST');
    assert.equal(lowered.load_balancing_policy, undefined);
    assert.deepEqual(lowered.least_request_lb_config, { choice_count: 3 });
    assert.equal(Number((lowered.common_lb_config as Dump).zone_aware_lb_config.min_cluster_size), 1);
    const compiled = compiledCluster(lowered as Parameters<typeof compiledCluster>[0]);
    assert.ok(compiled);
  });

  it('maps each policy onto its lb_policy and fields, by @type or by name', () => {
    const cases: Array<[JsonObject, string, (c: Dump) => void]> = [
      [policy('any', 'round_robin.v3.RoundRobin'), 'ROUND_ROBIN', () => {}],
      [
        policy('any', 'random.v3.Random', { locality_lb_config: { locality_weighted_lb_config: {} } }),
        'RANDOM',
        (c) => assert.deepEqual(c.common_lb_config.locality_weighted_lb_config, {}),
      ],
      [
        policy('any', 'ring_hash.v3.RingHash', { minimum_ring_size: '64', hash_function: 'MURMUR_HASH_2' }),
        'RING_HASH',
        (c) => {
          assert.equal(Number(c.ring_hash_lb_config.minimum_ring_size), 64);
          assert.equal(c.ring_hash_lb_config.hash_function, 'MURMUR_HASH_2');
        },
      ],
      [policy('any', 'maglev.v3.Maglev'), 'MAGLEV', () => {}],
      [policy('proxy.load_balancing_policies.random', null), 'RANDOM', () => {}],
    ];
    for (const [entry, lbPolicy, check] of cases) {
      const { errors, lowered } = loaded([entry]);
      assert.deepEqual(errors, [], lbPolicy);
      assert.equal(lowered?.lb_policy, lbPolicy);
      check(lowered as Dump);
    }
  });

  it('takes the first policy this build has', () => {
    const { errors, lowered } = loaded([
      policy('envoy.load_balancing_policies.wrr_locality', null),
      policy('envoy.load_balancing_policies.maglev', 'maglev.v3.Maglev'),
      policy('envoy.load_balancing_policies.random', 'random.v3.Random'),
    ]);
    assert.deepEqual(errors, []);
    assert.equal(lowered?.lb_policy, 'MAGLEV');
  });

  it('refuses, by name, a list with no policy it has, settings no balancer honours, and lb_policy beside it', () => {
    const none = loaded([policy('envoy.load_balancing_policies.wrr_locality', null)]).errors.join('\n');
    assert.match(none, /clusters\[0\]\.load_balancing_policy: none of its policies is implemented/);
    const slow = loaded([
      policy('x', 'round_robin.v3.RoundRobin', { slow_start_config: { slow_start_window: '10s' } }),
    ]).errors.join('\n');
    assert.match(slow, /policies\[0\]\.typed_extension_config\.typed_config\.slow_start_config: slow start/);
    const weights = loaded([
      policy('x', 'ring_hash.v3.RingHash', { locality_weighted_lb_config: {} }),
    ]).errors.join('\n');
    assert.match(weights, /typed_config\.locality_weighted_lb_config: locality weights for the hash balancers/);
    const table = loaded([policy('x', 'maglev.v3.Maglev', { table_size: '5' })]).errors.join('\n');
    assert.match(table, /typed_config\.table_size: a Maglev table_size/);
    const both = loaded([policy('x', 'random.v3.Random')], { lb_policy: 'RING_HASH' }).errors.join('\n');
    assert.match(both, /clusters\[0\]\.lb_policy: set with load_balancing_policy/);
    const twice = loaded([policy('x', 'least_request.v3.LeastRequest', { choice_count: 3 })], {
      least_request_lb_config: { choice_count: 2 },
    }).errors.join('\n');
    assert.match(
      twice,
      /typed_config\.choice_count: the cluster sets least_request_lb_config\.choice_count too/,
    );
  });
});
