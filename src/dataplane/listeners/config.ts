import type { Json, JsonObject, RawListener } from '../../../events/config.js';
import { hostKey } from '../../../reducers/hosts.js';
import { numberOr, objectOf, stringOr } from '../../../reducers/settings/values.js';

export type TrafficDirection = 'UNSPECIFIED' | 'INBOUND' | 'OUTBOUND';

/** The terminal network filter of a chain, by what it is rather than how it was spelled. */
export type NetworkFilterSpec =
  | { kind: 'http_connection_manager'; config: JsonObject; where: string }
  | { kind: 'tcp_proxy'; config: JsonObject; where: string };

/** `filter_chain_match`, reduced to what can be decided on a plaintext TCP connection. */
export interface ChainMatch {
  destinationPort: number | null;
  /** Local address ranges (`prefix_ranges`). */
  prefixRanges: Cidr[];
  sourcePrefixRanges: Cidr[];
  sourcePorts: number[];
  /**
   * Needs TLS inspection (server names, ALPN, `transport_protocol: tls`): such a chain never
   * matches here, as there is no TLS inspector listener filter.
   */
  needsTls: boolean;
}

export interface Cidr {
  prefix: string;
  len: number;
}

export interface FilterChainSpec {
  match: ChainMatch;
  filter: NetworkFilterSpec;
}

/** A listener's config as the data plane uses it. */
export interface ListenerSpec {
  name: string;
  ip: string;
  port: number;
  /** `ip:port` as configured (port 0 stays 0): the reference names `listener.<ip>_<port>.` from it. */
  statAddress: string;
  direction: TrafficDirection;
  bufferLimitBytes: number;
  chains: FilterChainSpec[];
}

export type ListenerParse = { ok: true; spec: ListenerSpec } | { ok: false; error: string };

const HCM_NAMES = new Set(['http_connection_manager', 'filters.network.http_connection_manager']);
const TCP_NAMES = new Set(['tcp_proxy', 'filters.network.tcp_proxy']);

/** `envoy.` and `proxy.` spell the same extension; the rest of the name says which. */
function filterKind(name: string): NetworkFilterSpec['kind'] | null {
  const bare = name.replace(/^(envoy|proxy)\./, '');
  if (bare === name) return null;
  if (HCM_NAMES.has(bare)) return 'http_connection_manager';
  if (TCP_NAMES.has(bare)) return 'tcp_proxy';
  return null;
}

const ONE_MIB = 1024 * 1024;

/** Reads a listener's canonical config; errors name the field and say what to change. */
export function parseListener(raw: RawListener): ListenerParse {
  const where = `listener '${raw.name}'`;
  const address = objectOf(raw.address);
  const socket = objectOf(address.socket_address);
  if (address.socket_address === undefined) {
    return {
      ok: false,
      error: `${where}: address.socket_address is required (pipe and other addresses are not served)`,
    };
  }
  if (socket.protocol === 'UDP')
    return { ok: false, error: `${where}: address.socket_address.protocol UDP is not served, use TCP` };
  const ip = stringOr(socket.address, '');
  if (!ip) return { ok: false, error: `${where}: address.socket_address.address is required` };
  const port = numberOr(socket.port_value, 0);
  const chainsRaw: Json[] = Array.isArray(raw.filter_chains) ? raw.filter_chains : [];
  if (chainsRaw.length === 0)
    return { ok: false, error: `${where}: filter_chains is empty, give at least one chain` };
  const chains: FilterChainSpec[] = [];
  for (const [i, chainRaw] of chainsRaw.entries()) {
    const chain = objectOf(chainRaw);
    const filter = terminalFilter(chain, `${where}.filter_chains[${i}]`);
    if ('error' in filter) return { ok: false, error: filter.error };
    chains.push({ match: chainMatch(objectOf(chain.filter_chain_match)), filter });
  }
  const direction = stringOr(raw.traffic_direction, 'UNSPECIFIED') as TrafficDirection;
  return {
    ok: true,
    spec: {
      name: raw.name,
      ip,
      port,
      statAddress: hostKey(ip, port),
      direction,
      bufferLimitBytes: numberOr(raw.per_connection_buffer_limit_bytes, ONE_MIB),
      chains,
    },
  };
}

function terminalFilter(chain: JsonObject, where: string): NetworkFilterSpec | { error: string } {
  const filters: Json[] = Array.isArray(chain.filters) ? chain.filters : [];
  if (filters.length === 0)
    return { error: `${where}.filters is empty, end the chain with a http_connection_manager or tcp_proxy` };
  for (const [i, f] of filters.entries()) {
    const name = stringOr(objectOf(f).name, '');
    if (filterKind(name) === null) {
      return {
        error: `${where}.filters[${i}]: network filter '${name}' is not available in this build; use proxy.filters.network.http_connection_manager or proxy.filters.network.tcp_proxy`,
      };
    }
    if (i < filters.length - 1) {
      return {
        error: `${where}.filters[${i}]: '${name}' is a terminal filter and must be the last of its chain`,
      };
    }
  }
  const last = objectOf(filters[filters.length - 1]);
  const kind = filterKind(last.name as string) as NetworkFilterSpec['kind'];
  // `typed_config` (Any, with its `@type`) is the current form, `config` (Struct) the old one.
  const config = last.typed_config !== undefined ? objectOf(last.typed_config) : objectOf(last.config);
  return { kind, config, where: `${where}.filters[${filters.length - 1}]` };
}

function cidrs(value: Json | undefined): Cidr[] {
  return (Array.isArray(value) ? value : []).map((c) => {
    const o = objectOf(c);
    const prefix = stringOr(o.address_prefix, '');
    return { prefix, len: numberOr(o.prefix_len, prefix.includes(':') ? 128 : 32) };
  });
}

function chainMatch(m: JsonObject): ChainMatch {
  const serverNames = Array.isArray(m.server_names) ? m.server_names : [];
  const alpn = Array.isArray(m.application_protocols) ? m.application_protocols : [];
  const transport = stringOr(m.transport_protocol, '');
  return {
    destinationPort: m.destination_port === undefined ? null : numberOr(m.destination_port, 0),
    prefixRanges: cidrs(m.prefix_ranges),
    sourcePrefixRanges: cidrs(m.source_prefix_ranges),
    sourcePorts: (Array.isArray(m.source_ports) ? m.source_ports : []).map((p) => numberOr(p, -1)),
    needsTls: serverNames.length > 0 || alpn.length > 0 || (transport !== '' && transport !== 'raw_buffer'),
  };
}
