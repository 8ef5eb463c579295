/**
 * mysql_proxy's compile step: `stat_prefix` is required; `access_log` and an SSL mode other
 * than DISABLE are refused by their paths.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { JsonObject } from '../../../../events/index.js';
import { Report } from '../../../../src/bootstrap/report.js';
import { mysqlProxyFactory } from '../../../../src/dataplane/network-filters/mysql-proxy/index.js';

function problems(config: JsonObject): string[] {
  const report = new Report('test');
  mysqlProxyFactory.compile(config, 'm', report);
  return report.problems.map((p) => `${p.path}: ${p.message}`);
}

describe('mysql_proxy compile', () => {
  it('takes the sandbox config and downstream_ssl DISABLE', () => {
    assert.deepEqual(problems({ stat_prefix: 'egress_mysql' }), []);
    assert.deepEqual(problems({ stat_prefix: 's', downstream_ssl: 'DISABLE' }), []);
  });

  it('refuses access_log, another SSL mode and a missing stat_prefix by their paths', () => {
    const found = problems({ access_log: '/tmp/mysql.log', downstream_ssl: 'REQUIRE' });
    assert.equal(found.length, 3, found.join('\n'));
    for (const path of ['stat_prefix', 'access_log', 'downstream_ssl'])
      assert.ok(
        found.some((f) => f.startsWith(`m.${path}: `)),
        `${path} in ${found.join('\n')}`,
      );
    assert.match(problems({ stat_prefix: 's', downstream_ssl: 'ALLOW' }).join(), /m\.downstream_ssl: ALLOW/);
  });
});
