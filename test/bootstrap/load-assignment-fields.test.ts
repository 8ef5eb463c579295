/**
 * A ClusterLoadAssignment's fields act, warn or are refused by name, whether it is a static
 * cluster's `load_assignment` or a resource discovered by EDS: both run compileClusterLoadAssignment.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { decodeResources } from '../../src/edges/xds/resources.js';
import { bootstrapOf, errorsOf, loadYaml } from '../helpers/bootstrap.js';

const ADDRESS = '{ socket_address: { address: 127.0.0.1, port_value: 80 } }';
const EDS_TYPE = 'type.googleapis.com/envoy.api.v2.ClusterLoadAssignment';

function staticCluster(assignment: string): string {
  return `static_resources: { clusters: [{ name: c, load_assignment: ${assignment} }] }`;
}

describe('ClusterLoadAssignment field tables', () => {
  it('refuses the policy fields of a static load_assignment by name', () => {
    const errors = errorsOf(
      loadYaml(
        staticCluster(
          `{ policy: { overprovisioning_factor: 200, drop_overloads: [{ category: x }] }, endpoints: [{ lb_endpoints: [{ endpoint: { address: ${ADDRESS} } }] }] }`,
        ),
      ),
    );
    const at = 'static_resources.clusters[0].load_assignment.policy';
    assert.ok(
      errors.some((e) =>
        e.includes(`${at}.overprovisioning_factor: overprovisioning_factor is not implemented`),
      ),
      errors.join('\n'),
    );
    assert.ok(
      errors.some((e) => e.includes(`${at}.drop_overloads: drop_overloads`)),
      errors.join('\n'),
    );
  });

  it('refuses a health_check_config on another port and proximity, warns about hostname, and lets acting fields through', () => {
    const endpoint = `{ endpoint: { address: ${ADDRESS}, health_check_config: { port_value: 81 } } }`;
    const errors = errorsOf(
      loadYaml(staticCluster(`{ endpoints: [{ proximity: 2, lb_endpoints: [${endpoint}] }] }`)),
    );
    const at = 'static_resources.clusters[0].load_assignment.endpoints[0]';
    assert.ok(
      errors.some((e) => e.includes(`${at}.proximity: proximity is not implemented`)),
      errors.join('\n'),
    );
    assert.ok(
      errors.some((e) =>
        e.includes(
          `${at}.lb_endpoints[0].endpoint.health_check_config.port_value: health checks on port 81, not the endpoint's own`,
        ),
      ),
      errors.join('\n'),
    );
    const acting = loadYaml(
      staticCluster(
        `{ cluster_name: c, endpoints: [{ locality: { zone: z }, priority: 1, load_balancing_weight: 3, lb_endpoints: [{ health_status: HEALTHY, load_balancing_weight: 2, metadata: { filter_metadata: { envoy.lb: { v: 1 } } }, endpoint: { address: ${ADDRESS}, hostname: h } }] }] }`,
      ),
    );
    bootstrapOf(acting);
    assert.ok(
      acting.warnings.some((w) => w.includes('Endpoint.hostname is accepted but has no effect')),
      acting.warnings.join('\n'),
    );
  });

  it('runs the same tables on an EDS resource', () => {
    const out = decodeResources(
      'eds',
      [
        {
          '@type': EDS_TYPE,
          cluster_name: 'web',
          policy: { endpoint_stale_after: '5s' },
          endpoints: [
            {
              lb_endpoints: [
                { endpoint: { address: { socket_address: { address: '127.0.0.1', port_value: 80 } } } },
              ],
            },
          ],
        },
        {
          '@type': EDS_TYPE,
          cluster_name: 'api',
          endpoints: [
            {
              lb_endpoints: [
                { endpoint: { address: { socket_address: { address: '127.0.0.1', port_value: 81 } } } },
              ],
            },
          ],
        },
      ],
      { allowUnknown: false, disabled: new Set() },
    );
    assert.deepEqual(
      out.resources.map((r) => r.name),
      ['api'],
    );
    assert.equal(out.rejected[0]?.name, 'web');
    assert.match(
      out.rejected[0]!.errors.join('\n'),
      /policy\.endpoint_stale_after: endpoint_stale_after is not implemented/,
    );
  });
});
