/**
 * `envoy.filters.network.postgres_proxy`: before a TCP proxy, it reads the Postgres protocol
 * both ways (./decoder.ts) and counts it in `postgres.<stat_prefix>.*`; the bytes pass unchanged.
 * See docs/data-plane.md, "postgres_proxy".
 */
import type { JsonObject } from '../../../../events/config.js';
import { checkFields } from '../../../bootstrap/honoured.js';
import type { Report } from '../../../bootstrap/report.js';
import type { ReadFilterFactory } from '../api.js';
import { protocolWatch } from '../protocol-watch.js';
import { POSTGRES_STATS, PostgresDecoder } from './decoder.js';

const V3ALPHA = 'envoy.extensions.filters.network.postgres_proxy.v3alpha.PostgresProxy';

/** The reference's v3alpha message; it has no v2 form. */
const POSTGRES_PROXY_PROTO = `
syntax = "proto3";
package envoy.extensions.filters.network.postgres_proxy.v3alpha;
message PostgresProxy {
  enum SSLMode {
    DISABLE = 0;
    REQUIRE = 1;
  }
  string stat_prefix = 1;
  .google.protobuf.BoolValue enable_sql_parsing = 2;
  bool terminate_ssl = 3;
  SSLMode upstream_ssl = 4;
}
`;

const FIELDS = {
  stat_prefix: 'act',
  // Each acts in its one value this build serves; the others are refused below by name.
  enable_sql_parsing: 'act',
  terminate_ssl: 'act',
  upstream_ssl: 'act',
} as const;

export interface PostgresProxySpec {
  statPrefix: string;
}

function compile(raw: JsonObject, path: string, report: Report): PostgresProxySpec {
  checkFields(raw, path, report, FIELDS, 'PostgresProxy');
  const statPrefix = typeof raw.stat_prefix === 'string' ? raw.stat_prefix : '';
  if (statPrefix === '') report.error(`${path}.stat_prefix`, 'required field missing', 'missing');
  if (raw.enable_sql_parsing === true)
    report.unsupported(
      `${path}.enable_sql_parsing`,
      'parsing SQL into dynamic metadata is not implemented; set it to false',
    );
  if (raw.terminate_ssl === true)
    report.unsupported(`${path}.terminate_ssl`, 'terminating Postgres SSL is not implemented');
  if (raw.upstream_ssl === 'REQUIRE' || raw.upstream_ssl === 1)
    report.unsupported(`${path}.upstream_ssl`, 'REQUIRE (SSL to the upstream) is not implemented');
  return { statPrefix };
}

export const postgresProxyFactory: ReadFilterFactory<PostgresProxySpec> = {
  name: 'envoy.filters.network.postgres_proxy',
  configType: V3ALPHA,
  schema: { source: POSTGRES_PROXY_PROTO },
  terminal: false,
  fieldTables: { PostgresProxy: FIELDS },
  compile,
  start: (spec, deps) =>
    protocolWatch(deps, `postgres.${spec.statPrefix}`, POSTGRES_STATS, (count) => new PostgresDecoder(count)),
};
