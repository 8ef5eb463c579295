/**
 * The compile step of the bootstrap's `stats_sinks` that send stats somewhere at each flush:
 * the statsd sink (UDP, or TCP to a cluster) and the DogStatsD one. The hystrix sink, which
 * only feeds an admin stream, is read by src/config/stats.ts. The same function runs at
 * `--mode validate` and when the stats edge starts (src/stats/start.ts).
 */
import type { JsonObject } from '../../events/config.js';
import { arrayOf, numberOr, objectOf, stringOr } from '../../reducers/settings/values.js';
import { CONFIG_TYPE, configTypeOf } from '../bootstrap/extensions.js';
import { acting, checkFields, type FieldTable } from '../bootstrap/honoured.js';
import { Report } from '../bootstrap/report.js';
import { checkIpLiteral } from './ip-literal.js';
import { SOCKET_ADDRESS_FIELDS } from './socket-address.js';

/** The reference's prefix of every name a statsd sink sends. */
export const DEFAULT_STATSD_PREFIX = 'envoy';

/** A statsd or DogStatsD sink compiled. */
export interface StatsdSinkSpec {
  kind: 'statsd';
  /** A UDP peer (`address`), or a TCP connection to a member of a cluster (`tcp_cluster_name`). */
  target: { kind: 'udp'; ip: string; port: number } | { kind: 'tcp'; cluster: string };
  /** Before every name, then a dot (`prefix`, default `envoy`). */
  prefix: string;
  /** DogStatsD: tag-extracted names, their tags as `|#name:value,...`. */
  tagged: boolean;
  /** `max_bytes_per_datagram`: lines joined up to this size; 0: a datagram per line. */
  maxDatagramBytes: number;
}

export type StatsSinkSpec = StatsdSinkSpec;

const STATSD_FIELDS: FieldTable = acting('address', 'tcp_cluster_name', 'prefix');
const DOG_STATSD_FIELDS: FieldTable = acting('address', 'prefix', 'max_bytes_per_datagram');
const ADDRESS_FIELDS: FieldTable = {
  socket_address: 'act',
  pipe: { refuse: 'a stats sink to a unix datagram socket (pipe) is not implemented; use socket_address' },
};

/** The field tables of this compile step, by the message name its findings use (docs/bootstrap.md lists them). */
export const FIELD_TABLES = {
  StatsdSink: STATSD_FIELDS,
  DogStatsdSink: DOG_STATSD_FIELDS,
  Address: ADDRESS_FIELDS,
};

/** A sink's UDP `address`: an IP and a port, as the reference resolves it (no name lookup). */
function udpAddress(raw: JsonObject, path: string, report: Report): StatsdSinkSpec['target'] | null {
  checkFields(raw, path, report, ADDRESS_FIELDS, 'Address');
  if (raw.socket_address === undefined) {
    if (raw.pipe === undefined) report.error(`${path}.socket_address`, 'required field missing', 'missing');
    return null;
  }
  const socket = objectOf(raw.socket_address);
  const at = `${path}.socket_address`;
  checkFields(socket, at, report, SOCKET_ADDRESS_FIELDS, 'SocketAddress');
  const ip = stringOr(socket.address, '');
  const port = numberOr(socket.port_value, 0);
  if (!ip) report.error(`${at}.address`, 'required field missing', 'missing');
  else checkIpLiteral(ip, `${at}.address`, report, 'sink');
  if (port < 1 || port > 65535)
    report.error(`${at}.port_value`, `${port} is not a port a sink can send to (1..65535)`);
  return { kind: 'udp', ip, port };
}

function statsdSink(raw: JsonObject, path: string, report: Report, dog: boolean): StatsdSinkSpec | null {
  checkFields(
    raw,
    path,
    report,
    dog ? DOG_STATSD_FIELDS : STATSD_FIELDS,
    dog ? 'DogStatsdSink' : 'StatsdSink',
  );
  const cluster = dog ? '' : stringOr(raw.tcp_cluster_name, '');
  let target: StatsdSinkSpec['target'] | null = null;
  if (raw.address !== undefined) target = udpAddress(objectOf(raw.address), `${path}.address`, report);
  else if (cluster) target = { kind: 'tcp', cluster };
  else
    report.error(
      `${path}.address`,
      dog ? 'required field missing' : 'required: address (UDP) or tcp_cluster_name (TCP)',
      'missing',
    );
  const max = raw.max_bytes_per_datagram;
  if (max !== undefined && numberOr(max, 0) <= 0)
    report.error(`${path}.max_bytes_per_datagram`, 'must be greater than 0');
  if (!target) return null;
  return {
    kind: 'statsd',
    target,
    prefix: stringOr(raw.prefix, '') || DEFAULT_STATSD_PREFIX,
    tagged: dog,
    maxDatagramBytes: numberOr(max, 0),
  };
}

/**
 * The sinks of `stats_sinks` that send (the hystrix sink is not one), each with its findings
 * in `report`; a TCP sink's cluster must be a static one, known when the sinks are made, as
 * in the reference.
 */
export function compileStatsSinks(bootstrap: JsonObject, report: Report): StatsSinkSpec[] {
  const out: StatsSinkSpec[] = [];
  const clusters = new Map(
    arrayOf(objectOf(bootstrap.static_resources).clusters).map((c) => [objectOf(c).name, objectOf(c)]),
  );
  for (const [i, entry] of arrayOf(bootstrap.stats_sinks).entries()) {
    const sink = objectOf(entry);
    const type = configTypeOf(sink);
    const path = `stats_sinks[${i}].typed_config`;
    if (type !== CONFIG_TYPE.statsdSink && type !== CONFIG_TYPE.dogStatsdSink) continue;
    const spec = statsdSink(objectOf(sink.typed_config), path, report, type === CONFIG_TYPE.dogStatsdSink);
    if (spec?.target.kind !== 'tcp') {
      if (spec) out.push(spec);
      continue;
    }
    const cluster = clusters.get(spec.target.cluster);
    if (!cluster)
      report.error(`${path}.tcp_cluster_name`, `unknown cluster '${spec.target.cluster}' (a static cluster)`);
    // The sink dials plain TCP: a cluster that asks for TLS is refused rather than sent to in clear.
    else if (cluster.transport_socket !== undefined || cluster.tls_context !== undefined)
      report.unsupported(
        `${path}.tcp_cluster_name`,
        `TLS to a tcp statsd cluster ('${spec.target.cluster}' has a transport socket) is not implemented`,
      );
    else out.push(spec);
  }
  return out;
}

/** The sinks of a bootstrap already validated (none when its sinks have findings). */
export function statsSinksOf(bootstrap: JsonObject): StatsSinkSpec[] {
  const report = new Report('stats_sinks');
  const sinks = compileStatsSinks(bootstrap, report);
  return report.failed ? [] : sinks;
}
