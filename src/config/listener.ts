import type { Json, JsonObject } from '../../events/config.js';
import { hostKey } from '../../reducers/settings/endpoints.js';
import { durationMs, numberOr, objectOf, stringOr } from '../../reducers/settings/values.js';
import { acting, checkFields, type FieldTable, notYet } from '../bootstrap/honoured.js';
import { Report } from '../bootstrap/report.js';
import { compileListenerFilters, LISTENER_FILTER_FIELDS } from '../dataplane/listeners/filters/registry.js';
import { socketHelper } from '../dataplane/listeners/native.js';
import { type ChainFilters, compileChainFilters } from '../dataplane/network-filters/registry.js';
import { compileChainTls } from './chain-tls.js';
import type { Compiled, CompileOptions } from './compiled.js';
import { checkIpLiteral } from './ip-literal.js';
import { NO_SECRETS, type Secrets } from './secrets.js';
import { SOCKET_ADDRESS_FIELDS } from './socket-address.js';
import type { DownstreamTls } from './tls-context.js';

export type TrafficDirection = 'UNSPECIFIED' | 'INBOUND' | 'OUTBOUND';

/** `filter_chain_match`; empty lists and strings match anything. */
export interface ChainMatch {
  destinationPort: number | null;
  /** Local address ranges (`prefix_ranges`). */
  prefixRanges: Cidr[];
  sourcePrefixRanges: Cidr[];
  sourcePorts: number[];
  /** SNI names, exact or `*.suffix`, lower case. */
  serverNames: string[];
  /** `tls` or `raw_buffer`; '' for any. */
  transportProtocol: string;
  applicationProtocols: string[];
}

export interface Cidr {
  prefix: string;
  len: number;
}

export interface FilterChainSpec {
  match: ChainMatch;
  /** Its network filters, each compiled by its factory (src/dataplane/network-filters/). */
  filters: ChainFilters;
  /** The chain's `DownstreamTlsContext`; null: plain text. */
  tls: DownstreamTls | null;
}

/** A listener's config as the data plane uses it. */
export interface ListenerSpec {
  name: string;
  ip: string;
  port: number;
  /** `ip:port` as configured (port 0 stays 0): the reference names `listener.<ip>_<port>.` from it. */
  statAddress: string;
  /** How long a ClientHello peek may take (`listener_filters_timeout`; 0: no limit). */
  inspectTimeoutMs: number;
  /** `continue_on_listener_filters_timeout`: a peek that times out picks a chain without TLS facts. */
  continueOnInspectTimeout: boolean;
  /** An explicit TLS inspector listener filter: every connection is peeked. */
  tlsInspector: boolean;
  /** The HTTP inspector listener filter: a plain-text connection's HTTP version is read for `application_protocols`. */
  httpInspector: boolean;
  direction: TrafficDirection;
  bufferLimitBytes: number;
  /** Listen queue length (`tcp_backlog_size`). */
  backlog: number;
  /**
   * The `original_dst` listener filter (or `use_original_dst`, which implies it): each
   * connection's local address becomes the one its client dialled before an iptables REDIRECT.
   */
  restoreOriginalDst: boolean;
  /** `use_original_dst`: a restored connection goes to the listener bound at its destination, if any. */
  handOffToOriginalDst: boolean;
  /** `transparent` (IP_TRANSPARENT) and `freebind` (IP_FREEBIND), set before the socket binds. */
  transparent: boolean;
  freebind: boolean;
  /** `ignore_global_conn_limit` or `bypass_overload_manager`: outside the process-wide connection limit. */
  ignoreGlobalLimit: boolean;
  /** `bypass_overload_manager`: no overload action applies to it or its requests (Istio's and Envoy Gateway's stats listeners). */
  bypassOverload: boolean;
  chains: FilterChainSpec[];
}

const ONE_MIB = 1024 * 1024;
/** The reference's default `tcp_backlog_size`. */
const DEFAULT_BACKLOG = 1024;

const LISTENER_FIELDS: FieldTable = {
  ...acting('name', 'address', 'filter_chains', 'per_connection_buffer_limit_bytes', 'traffic_direction'),
  ...acting('tcp_backlog_size'),
  // Hints for hot restart and listener filters, neither of which this build has.
  metadata: 'advise',
  drain_type: 'advise',
  deprecated_v1: 'advise',
  // They bound the ClientHello peek this build does in place of the TLS inspector.
  ...acting('listener_filters_timeout', 'continue_on_listener_filters_timeout'),
  // Node's cluster module shares one listening socket among workers either way.
  reuse_port: 'advise',
  // Each by its factory (src/dataplane/listeners/filters/).
  listener_filters: 'act',
  // Through the native socket helper (./native.ts); refused by name where it does not load.
  ...acting('use_original_dst', 'transparent', 'freebind'),
  ...acting('ignore_global_conn_limit', 'bypass_overload_manager'),
  udp_listener_config: notYet('UDP listening'),
  api_listener: notYet('the API listener'),
};
const CHAIN_FIELDS: FieldTable = {
  ...acting('filter_chain_match', 'filters', 'transport_socket', 'tls_context'),
  metadata: 'advise',
  name: 'advise',
  use_proxy_proto: notYet('the PROXY protocol'),
};
const CHAIN_MATCH_FIELDS: FieldTable = {
  ...acting(
    'destination_port',
    'prefix_ranges',
    'source_prefix_ranges',
    'source_ports',
    'transport_protocol',
    // Read from the ClientHello by the listener itself (src/tls/client-hello.ts).
    'server_names',
    'application_protocols',
  ),
};
const SOCKET_FIELDS = SOCKET_ADDRESS_FIELDS;

/** The field tables of this compile step, by the message name its findings use (docs/bootstrap.md lists them). */
export const FIELD_TABLES = {
  Listener: LISTENER_FIELDS,
  FilterChain: CHAIN_FIELDS,
  FilterChainMatch: CHAIN_MATCH_FIELDS,
  ListenerFilter: LISTENER_FILTER_FIELDS,
  SocketAddress: SOCKET_FIELDS,
};

/**
 * Compiles a listener's canonical config (`path` is where it sits, e.g.
 * `static_resources.listeners[0]`): address, filter chains and their terminal filters, each
 * picked by its resolved `typed_config` `@type`. The value is null when it found errors.
 */
export function compileListener(
  raw: JsonObject,
  path: string,
  options: CompileOptions = {},
): Compiled<ListenerSpec | null> {
  const report = options.report ?? new Report(path);
  return { value: listenerSpec(raw, path, report, options.secrets ?? NO_SECRETS), findings: report };
}

/** By the secrets its TLS contexts were made with (a rotated secret compiles afresh), then by config. */
const compiled = new WeakMap<Secrets, WeakMap<JsonObject, Compiled<ListenerSpec | null>>>();

/**
 * What the listener manager serves: a listener config compiled with the secrets of the
 * moment, once per config and set of secrets (a bind, a rebind and a secret rotation that
 * changes nothing reuse it). Findings are labelled with the listener's name.
 */
export function compiledListener(raw: JsonObject, secrets: Secrets): Compiled<ListenerSpec | null> {
  const bySecrets = compiled.get(secrets) ?? new WeakMap<JsonObject, Compiled<ListenerSpec | null>>();
  compiled.set(secrets, bySecrets);
  const hit = bySecrets.get(raw);
  if (hit) return hit;
  const out = compileListener(raw, '', { secrets, report: new Report(`listener '${String(raw.name)}'`) });
  bySecrets.set(raw, out);
  return out;
}

function listenerSpec(raw: JsonObject, path: string, report: Report, secrets: Secrets): ListenerSpec | null {
  const before = report.problems.length;
  checkFields(raw, path, report, LISTENER_FIELDS, 'Listener');
  const name = stringOr(raw.name, '');
  const address = objectOf(raw.address);
  const socket = objectOf(address.socket_address);
  const ap = `${path}.address`;
  if (raw.address === undefined) report.error(ap, 'required field missing', 'missing');
  else if (address.socket_address === undefined)
    report.unsupported(ap, 'only socket_address is served (pipe addresses are not implemented)');
  else {
    checkFields(socket, `${ap}.socket_address`, report, SOCKET_FIELDS, 'SocketAddress');
    if (socket.protocol === 'UDP')
      report.unsupported(`${ap}.socket_address.protocol`, 'UDP listeners are not implemented; use TCP');
    if (!socket.address) report.error(`${ap}.socket_address.address`, 'required field missing', 'missing');
    else checkIpLiteral(socket.address, `${ap}.socket_address.address`, report, 'listener');
  }
  const port = numberOr(socket.port_value, 0);
  if (port > 65535) report.error(`${ap}.socket_address.port_value`, `${port} is not a port (0..65535)`);
  const filters = compileListenerFilters(raw.listener_filters, path, report);
  const restoreOriginalDst = filters.originalDst || raw.use_original_dst === true;
  const transparent = raw.transparent === true;
  const freebind = raw.freebind === true;
  requireHelper(path, report, [
    [filters.originalDstAt, filters.originalDst],
    ['use_original_dst', raw.use_original_dst === true],
    ['transparent', transparent],
    ['freebind', freebind],
  ]);
  const chainsRaw: Json[] = Array.isArray(raw.filter_chains) ? raw.filter_chains : [];
  if (chainsRaw.length === 0)
    report.error(`${path}.filter_chains`, 'a listener needs at least one filter chain', 'missing');
  const chains: FilterChainSpec[] = [];
  chainsRaw.forEach((chainRaw, i) => {
    const chain = compileChain(objectOf(chainRaw), `${path}.filter_chains[${i}]`, report, secrets);
    if (chain) chains.push(chain);
  });
  if (report.problems.length > before) return null;
  const ip = stringOr(socket.address, '');
  return {
    name,
    ip,
    port,
    statAddress: hostKey(ip, port),
    inspectTimeoutMs: durationMs(raw.listener_filters_timeout, 15_000),
    continueOnInspectTimeout: raw.continue_on_listener_filters_timeout === true,
    tlsInspector: filters.tlsInspector,
    httpInspector: filters.httpInspector,
    direction: stringOr(raw.traffic_direction, 'UNSPECIFIED') as TrafficDirection,
    bufferLimitBytes: numberOr(raw.per_connection_buffer_limit_bytes, ONE_MIB),
    backlog: numberOr(raw.tcp_backlog_size, DEFAULT_BACKLOG),
    ignoreGlobalLimit: raw.ignore_global_conn_limit === true || raw.bypass_overload_manager === true,
    bypassOverload: raw.bypass_overload_manager === true,
    restoreOriginalDst,
    handOffToOriginalDst: raw.use_original_dst === true,
    transparent,
    freebind,
    chains,
  };
}

/**
 * The listener options only the native socket helper can serve: each one set is refused by
 * name where the helper does not load, with the reason it did not.
 */
function requireHelper(path: string, report: Report, uses: Array<[string, boolean]>): void {
  const used = uses.filter(([, on]) => on);
  if (used.length === 0) return;
  const helper = socketHelper();
  if (typeof helper !== 'string') return;
  for (const [field] of used)
    report.unsupported(
      `${path}.${field}`,
      `needs the native socket helper, which is not available: ${helper}`,
    );
}

function compileChain(
  chain: JsonObject,
  path: string,
  report: Report,
  secrets: Secrets,
): FilterChainSpec | null {
  checkFields(chain, path, report, CHAIN_FIELDS, 'FilterChain');
  const tls = compileChainTls(chain, path, report, secrets);
  const matchRaw = objectOf(chain.filter_chain_match);
  checkFields(matchRaw, `${path}.filter_chain_match`, report, CHAIN_MATCH_FIELDS, 'FilterChainMatch');
  const transport = stringOr(matchRaw.transport_protocol, '');
  if (transport !== '' && transport !== 'raw_buffer' && transport !== 'tls')
    report.unsupported(
      `${path}.filter_chain_match.transport_protocol`,
      `'${transport}' is never detected by this build (only tls and raw_buffer are)`,
    );
  const filters = compileChainFilters(chain.filters, `${path}.filters`, report);
  return filters ? { match: chainMatch(matchRaw), filters, tls } : null;
}

function strings(value: Json | undefined): string[] {
  return Array.isArray(value) ? value.filter((v): v is string => typeof v === 'string') : [];
}

function cidrs(value: Json | undefined): Cidr[] {
  return (Array.isArray(value) ? value : []).map((c) => {
    const o = objectOf(c);
    const prefix = stringOr(o.address_prefix, '');
    return { prefix, len: numberOr(o.prefix_len, prefix.includes(':') ? 128 : 32) };
  });
}

function chainMatch(m: JsonObject): ChainMatch {
  return {
    destinationPort: m.destination_port === undefined ? null : numberOr(m.destination_port, 0),
    prefixRanges: cidrs(m.prefix_ranges),
    sourcePrefixRanges: cidrs(m.source_prefix_ranges),
    sourcePorts: (Array.isArray(m.source_ports) ? m.source_ports : []).map((p) => numberOr(p, -1)),
    serverNames: strings(m.server_names).map((n) => n.toLowerCase()),
    transportProtocol: stringOr(m.transport_protocol, ''),
    applicationProtocols: strings(m.application_protocols),
  };
}
