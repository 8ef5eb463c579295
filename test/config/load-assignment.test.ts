/** The ClusterLoadAssignment's compile step (static CDS/EDS and discovered EDS): its rules and its members. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { JsonObject } from '../../events/index.js';
import { configuredEndpoints } from '../../reducers/settings/endpoints.js';
import { Report } from '../../src/bootstrap/report.js';
import {
  compileClusterLoadAssignment,
  compiledClusterLoadAssignment,
} from '../../src/config/load-assignment.js';
import { decodeResources } from '../../src/edges/xds/resources.js';
import { assignment } from '../helpers/xds-fixtures.js';

const EDS_TYPE = 'type.googleapis.com/envoy.api.v2.ClusterLoadAssignment';

describe('compileClusterLoadAssignment', () => {
  it('refuses an endpoint port above 65535, naming it', () => {
    // Root cause: the walk reads port_value as a uint32 and only listener addresses checked
    // the reference's `lte: 65535` rule, so an EDS push (or a static cluster) with port 70000
    // was accepted and its host named no port. Found by test/edges/xds/client-fuzz.test.ts.
    const report = new Report('ClusterLoadAssignment');
    compileClusterLoadAssignment(assignment('svc', [1, 70_000]), '', { report });
    assert.equal(report.failed, true);
    assert.match(
      report.errors.join('\n'),
      /lb_endpoints\[1\]\.endpoint\.address\.socket_address\.port_value.*70000 is not a port/,
    );
  });

  it('accepts ports 0 and 65535', () => {
    const { value, findings } = compileClusterLoadAssignment(assignment('svc', [0, 65_535]), '');
    assert.deepEqual(findings.errors, []);
    assert.deepEqual(
      value.map((h) => h.address),
      ['127.0.0.1:0', '127.0.0.1:65535'],
    );
  });

  it("takes an endpoint's health_check_config naming its own port; refuses another port and a hostname by name", () => {
    const withCheck = (check: JsonObject): JsonObject => ({
      cluster_name: 'svc',
      endpoints: [
        {
          lb_endpoints: [
            {
              endpoint: {
                address: { socket_address: { address: '127.0.0.1', port_value: 8080 } },
                health_check_config: check,
              },
            },
          ],
        },
      ],
    });
    assert.deepEqual(compileClusterLoadAssignment(withCheck({ port_value: 8080 }), '').findings.errors, []);
    assert.deepEqual(compileClusterLoadAssignment(withCheck({}), '').findings.errors, []);
    const refused = compileClusterLoadAssignment(
      withCheck({ port_value: 9090, hostname: 'h' }),
      'la',
    ).findings;
    assert.match(
      refused.errors.join('\n'),
      /lb_endpoints\[0\]\.endpoint\.health_check_config\.port_value: health checks on port 9090, not the endpoint's own 8080, are not implemented/,
    );
    assert.match(
      refused.errors.join('\n'),
      /health_check_config\.hostname: health_check_config\.hostname \(the Host/,
    );
  });

  it('NACKs an EDS endpoint named by a host name, as the reference does ("malformed IP address")', () => {
    const named = {
      cluster_name: 'svc',
      endpoints: [
        {
          lb_endpoints: [
            { endpoint: { address: { socket_address: { address: 'backend.internal', port_value: 80 } } } },
          ],
        },
      ],
    };
    const out = decodeResources('eds', [{ '@type': EDS_TYPE, ...named }], {
      allowUnknown: false,
      disabled: new Set(),
    });
    assert.equal(out.resources.length, 0);
    assert.match(
      out.rejected.map((r) => r.errors.join('\n')).join('\n'),
      /lb_endpoints\[0\]\.endpoint\.address\.socket_address\.address: malformed IP address: backend\.internal/,
    );
  });

  it('the members EDS applies are the ones discovery compiled, read once', () => {
    const out = decodeResources('eds', [{ '@type': EDS_TYPE, ...assignment('svc', [8080, 8081]) }], {
      allowUnknown: false,
      disabled: new Set(),
    });
    assert.deepEqual(out.rejected, []);
    const config = out.resources[0]!.config;
    const members = compiledClusterLoadAssignment(config);
    assert.equal(compiledClusterLoadAssignment(config), members, 'kept by the config, not read again');
    assert.deepEqual(members, configuredEndpoints({ name: 'svc', load_assignment: config }));
    assert.deepEqual(
      members.map((h) => [h.address, h.weight, h.edsHealth]),
      [
        ['127.0.0.1:8080', 1, 'UNKNOWN'],
        ['127.0.0.1:8081', 1, 'UNKNOWN'],
      ],
    );
  });
});
