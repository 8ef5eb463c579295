/** Rules of a cluster's load assignment beyond its shape (static CDS/EDS and discovered EDS). */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Report } from '../../src/bootstrap/report.js';
import { checkLoadAssignment } from '../../src/config/load-assignment.js';
import { assignment } from '../helpers/xds-fixtures.js';

describe('checkLoadAssignment', () => {
  it('refuses an endpoint port above 65535, naming it', () => {
    // Root cause: the walk reads port_value as a uint32 and only listener addresses checked
    // the reference's `lte: 65535` rule, so an EDS push (or a static cluster) with port 70000
    // was accepted and its host named no port. Found by test/xds/client-fuzz.test.ts.
    const report = new Report('ClusterLoadAssignment');
    checkLoadAssignment(assignment('svc', [1, 70_000]), '', report);
    assert.equal(report.failed, true);
    assert.match(
      report.errors.join('\n'),
      /lb_endpoints\[1\]\.endpoint\.address\.socket_address\.port_value.*70000 is not a port/,
    );
  });

  it('accepts ports 0 and 65535', () => {
    const report = new Report('ClusterLoadAssignment');
    checkLoadAssignment(assignment('svc', [0, 65_535]), '', report);
    assert.deepEqual(report.errors, []);
  });
});
