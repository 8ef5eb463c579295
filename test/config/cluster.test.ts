/** The Cluster's compile step: its findings, and the value consumers read. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { RawCluster } from '../../events/index.js';
import { Report } from '../../src/bootstrap/report.js';
import { compileCluster, compiledCluster } from '../../src/config/cluster.js';
import { assignment } from '../helpers/xds-fixtures.js';

describe('compileCluster', () => {
  const cluster = (extra: object = {}): RawCluster => ({
    name: 'backend',
    connect_timeout: '0.25s',
    load_assignment: assignment('backend', [8080]),
    ...extra,
  });

  it('returns the value consumers read, and compiledCluster finds the same object by the config', () => {
    const raw = cluster({
      circuit_breakers: { thresholds: [{ max_requests: 7 }] },
      health_checks: [
        { timeout: '1s', interval: '2s', unhealthy_threshold: 2, healthy_threshold: 1, tcp_health_check: {} },
      ],
      outlier_detection: { consecutive_5xx: 3 },
      upstream_bind_config: { source_address: { address: '127.0.0.1', port_value: 0 } },
      common_http_protocol_options: { idle_timeout: '5s' },
    });
    const { value, findings } = compileCluster(raw, 'static_resources.clusters[0]');
    assert.deepEqual(findings.errors, []);
    assert.equal(value.settings.connectTimeoutMs, 250);
    assert.equal(value.settings.thresholds.DEFAULT.maxRequests, 7);
    assert.equal(value.checks.length, 1);
    assert.equal(value.checks[0]?.intervalMs, 2000);
    assert.equal(value.outlier?.consecutive5xx, 3);
    assert.equal(value.connection.localAddress, '127.0.0.1');
    assert.equal(value.connection.idleTimeoutMs, 5000);
    assert.equal(compiledCluster(raw), value, 'compiled once, read by identity');
  });

  it('compiles a copy it never saw (a worker, a replay) once, to an equal value', () => {
    const raw = cluster({ outlier_detection: { interval: '3s' } });
    const copy = structuredClone(raw);
    const first = compiledCluster(copy);
    assert.equal(compiledCluster(copy), first);
    assert.deepEqual(first, compileCluster(raw, '').value);
    assert.equal(first.outlier?.intervalMs, 3000);
  });

  it('names each refused field by its path, in the report it is given', () => {
    const report = new Report('bootstrap.yaml');
    const { findings } = compileCluster(
      cluster({
        health_checks: [
          { timeout: '1s', interval: '1s', unhealthy_threshold: 1, healthy_threshold: 1, alt_port: 9 },
        ],
      }),
      'static_resources.clusters[3]',
      { report },
    );
    assert.equal(findings, report);
    assert.match(
      report.errors.join('\n'),
      /static_resources\.clusters\[3\]\.health_checks\[0\]\.alt_port: alt_port/,
    );
  });
});
