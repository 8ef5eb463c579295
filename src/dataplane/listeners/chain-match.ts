import { BlockList, isIPv6 } from 'node:net';
import type { ChainMatch, Cidr } from '../../config/listener.js';

/** The facts of an accepted connection a filter chain can match on. */
export interface ConnectionFacts {
  localAddress: string;
  localPort: number;
  remoteAddress: string;
  remotePort: number;
  /** `tls` when the first bytes are a TLS ClientHello, else `raw_buffer`. */
  transportProtocol: string;
  /** SNI of the ClientHello, lower case; empty when none. */
  serverName: string;
  /** ALPN offered by the ClientHello. */
  applicationProtocols: readonly string[];
}

/** One CIDR range ready to test. */
interface Range {
  len: number;
  list: BlockList;
}

/** A chain's match, compiled once per listener. */
export interface CompiledMatch {
  match: ChainMatch;
  local: Range[];
  source: Range[];
}

function ranges(cidrs: Cidr[]): Range[] {
  return cidrs.map((r) => {
    const list = new BlockList();
    list.addSubnet(r.prefix, r.len, isIPv6(r.prefix) ? 'ipv6' : 'ipv4');
    return { len: r.len, list };
  });
}

export function compileMatch(match: ChainMatch): CompiledMatch {
  return { match, local: ranges(match.prefixRanges), source: ranges(match.sourcePrefixRanges) };
}

/** Whether any chain matches on what only the ClientHello tells (so connections must be peeked). */
export function needsClientHello(chains: readonly CompiledMatch[]): boolean {
  return chains.some(
    (c) =>
      c.match.serverNames.length > 0 ||
      c.match.transportProtocol !== '' ||
      c.match.applicationProtocols.length > 0,
  );
}

/** `::ffff:10.0.0.1` (a v4 peer on a dual-stack socket) is `10.0.0.1` for matching. */
function plain(address: string): string {
  return address.startsWith('::ffff:') && address.includes('.') ? address.slice(7) : address;
}

/** The longest range holding `address`, as its prefix length; -1 when none does; 0 for no ranges. */
function longestPrefix(list: Range[], address: string): number {
  if (list.length === 0) return 0;
  const a = plain(address);
  const family = isIPv6(a) ? 'ipv6' : 'ipv4';
  let best = -1;
  // A range of length 0 is still more specific than no range at all.
  for (const r of list) if (r.list.check(a, family)) best = Math.max(best, r.len + 1);
  return best;
}

/**
 * An exact server name beats the longest wildcard (`*.b.c` holds `a.b.c` and `a.x.b.c`, as
 * the reference's suffix lookup does); no names: 0; no match: -1.
 */
function serverNameScore(names: string[], sni: string): number {
  if (names.length === 0) return 0;
  let best = -1;
  for (const n of names) {
    const name = n.toLowerCase();
    if (name === sni) return Number.MAX_SAFE_INTEGER;
    const suffix = name.slice(1);
    if (name.startsWith('*.') && sni.length > suffix.length && sni.endsWith(suffix))
      best = Math.max(best, name.length);
  }
  return best;
}

/**
 * The criteria in the reference's order; at each, only the chains with the most specific
 * value that holds for the connection go on (no going back to a less specific one when a
 * later criterion fails), so a connection matches one chain or none.
 */
const CRITERIA: Array<(c: CompiledMatch, f: ConnectionFacts) => number> = [
  (c, f) => (c.match.destinationPort === null ? 0 : c.match.destinationPort === f.localPort ? 1 : -1),
  (c, f) => longestPrefix(c.local, f.localAddress),
  (c, f) => serverNameScore(c.match.serverNames, f.serverName),
  (c, f) =>
    c.match.transportProtocol === '' ? 0 : c.match.transportProtocol === f.transportProtocol ? 1 : -1,
  (c, f) =>
    c.match.applicationProtocols.length === 0
      ? 0
      : c.match.applicationProtocols.some((p) => f.applicationProtocols.includes(p))
        ? 1
        : -1,
  (c, f) => longestPrefix(c.source, f.remoteAddress),
  (c, f) => (c.match.sourcePorts.length === 0 ? 0 : c.match.sourcePorts.includes(f.remotePort) ? 1 : -1),
];

/** The index of the chain that serves a connection, or -1 (`no_filter_chain_match`); the first on a tie. */
export function selectChain(chains: readonly CompiledMatch[], facts: ConnectionFacts): number {
  let candidates = chains.map((_, i) => i);
  for (const criterion of CRITERIA) {
    let best = -1;
    const scores = candidates.map((i) => {
      const s = criterion(chains[i] as CompiledMatch, facts);
      best = Math.max(best, s);
      return s;
    });
    if (best < 0) return -1;
    candidates = candidates.filter((_, k) => scores[k] === best);
  }
  return candidates[0] ?? -1;
}
