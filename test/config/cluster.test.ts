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

describe("a STATIC cluster's endpoint addresses", () => {
  const endpoint = (address: string) => ({
    endpoint: { address: { socket_address: { address, port_value: 80 } } },
  });
  const errors = (extra: object) =>
    compileCluster(
      { name: 'b', connect_timeout: '1s', ...extra } as RawCluster,
      'static_resources.clusters[0]',
    ).findings.errors.join('\n');

  it('refuses a host name, as the reference does ("malformed IP address"), by its path', () => {
    const text = errors({
      type: 'STATIC',
      load_assignment: { endpoints: [{ lb_endpoints: [endpoint('127.0.0.1'), endpoint('localhost')] }] },
    });
    assert.match(
      text,
      /static_resources\.clusters\[0\]\.load_assignment\.endpoints\[0\]\.lb_endpoints\[1\]\.endpoint\.address\.socket_address\.address: malformed IP address: localhost/,
    );
    assert.doesNotMatch(text, /lb_endpoints\[0\]/);
  });

  it('refuses one in the deprecated hosts too, and with no type set (STATIC is the default)', () => {
    const text = errors({ hosts: [{ socket_address: { address: 'backend.internal', port_value: 80 } }] });
    assert.match(
      text,
      /static_resources\.clusters\[0\]\.hosts\[0\]\.socket_address\.address: malformed IP address/,
    );
  });

  it('leaves host names to STRICT_DNS and LOGICAL_DNS, and takes IPv6 literals', () => {
    for (const type of ['STRICT_DNS', 'LOGICAL_DNS'])
      assert.equal(
        errors({ type, load_assignment: { endpoints: [{ lb_endpoints: [endpoint('localhost')] }] } }),
        '',
      );
    assert.equal(
      errors({ type: 'STATIC', load_assignment: { endpoints: [{ lb_endpoints: [endpoint('::1')] }] } }),
      '',
    );
  });
});
