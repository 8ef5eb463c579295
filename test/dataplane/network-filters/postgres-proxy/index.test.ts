/**
 * postgres_proxy's compile step: `stat_prefix` is required, and each field value this build
 * does not serve (SQL parsing, SSL termination, SSL upstream) is refused by its path.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { JsonObject } from '../../../../events/index.js';
import { Report } from '../../../../src/bootstrap/report.js';
import { postgresProxyFactory } from '../../../../src/dataplane/network-filters/postgres-proxy/index.js';

function problems(config: JsonObject): string[] {
  const report = new Report('test');
  postgresProxyFactory.compile(config, 'p', report);
  return report.problems.map((p) => `${p.path}: ${p.message}`);
}

describe('postgres_proxy compile', () => {
  it('takes the sandbox config and the values it serves', () => {
    assert.deepEqual(problems({ stat_prefix: 'egress_postgres' }), []);
    assert.deepEqual(
      problems({
        stat_prefix: 's',
        enable_sql_parsing: false,
        terminate_ssl: false,
        upstream_ssl: 'DISABLE',
      }),
      [],
    );
  });

  it('refuses each value it does not serve by its path, and a missing stat_prefix', () => {
    const found = problems({
      enable_sql_parsing: true,
      terminate_ssl: true,
      upstream_ssl: 'REQUIRE',
      other: 1,
    });
    assert.equal(found.length, 5, found.join('\n'));
    for (const path of ['stat_prefix', 'enable_sql_parsing', 'terminate_ssl', 'upstream_ssl', 'other'])
      assert.ok(
        found.some((f) => f.startsWith(`p.${path}: `)),
        `${path} in ${found.join('\n')}`,
      );
  });
});
