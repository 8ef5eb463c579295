/**
 * `envoy.filters.network.mysql_proxy`: before a TCP proxy, it reads the MySQL protocol both ways
 * (./decoder.ts) and counts it in `mysql.<stat_prefix>.*`; the bytes pass unchanged. See
 * docs/data-plane.md, "MySQL proxy".
 */
import type { JsonObject } from '../../../../events/config.js';
import { checkFields, notYet } from '../../../bootstrap/honoured.js';
import type { Report } from '../../../bootstrap/report.js';
import type { ReadFilterFactory } from '../api.js';
import { protocolWatch } from '../protocol-watch.js';
import { MYSQL_STATS, MysqlDecoder } from './decoder.js';

const V1ALPHA1 = 'envoy.config.filter.network.mysql_proxy.v1alpha1.MySQLProxy';

/** v1alpha1 as the v2 API had it, with v3's `downstream_ssl`. */
const MYSQL_PROXY_PROTO = `
syntax = "proto3";
package envoy.config.filter.network.mysql_proxy.v1alpha1;
message MySQLProxy {
  enum SSLMode {
    DISABLE = 0;
    REQUIRE = 1;
    ALLOW = 2;
  }
  string stat_prefix = 1;
  string access_log = 2;
  SSLMode downstream_ssl = 3;
}
`;

const FIELDS = {
  stat_prefix: 'act',
  access_log: notYet('MySQLProxy.access_log (a MySQL access log file)'),
  // Acts in DISABLE, the default; the others are refused below by name.
  downstream_ssl: 'act',
} as const;

export interface MysqlProxySpec {
  statPrefix: string;
}

function compile(raw: JsonObject, path: string, report: Report): MysqlProxySpec {
  checkFields(raw, path, report, FIELDS, 'MySQLProxy');
  const statPrefix = typeof raw.stat_prefix === 'string' ? raw.stat_prefix : '';
  if (statPrefix === '') report.error(`${path}.stat_prefix`, 'required field missing', 'missing');
  if (raw.downstream_ssl !== undefined && raw.downstream_ssl !== 'DISABLE' && raw.downstream_ssl !== 0)
    report.unsupported(
      `${path}.downstream_ssl`,
      `${String(raw.downstream_ssl)} (terminating the client's MySQL SSL) is not implemented`,
    );
  return { statPrefix };
}

export const mysqlProxyFactory: ReadFilterFactory<MysqlProxySpec> = {
  name: 'envoy.filters.network.mysql_proxy',
  configType: V1ALPHA1,
  typeAliases: { 'envoy.extensions.filters.network.mysql_proxy.v3.MySQLProxy': V1ALPHA1 },
  schema: { source: MYSQL_PROXY_PROTO },
  terminal: false,
  fieldTables: { MySQLProxy: FIELDS },
  compile,
  start: (spec, deps) =>
    protocolWatch(deps, `mysql.${spec.statPrefix}`, MYSQL_STATS, (count) => new MysqlDecoder(count)),
};
