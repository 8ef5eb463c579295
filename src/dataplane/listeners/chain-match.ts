import { BlockList, isIPv6 } from 'node:net';
import type { ChainMatch, Cidr } from './config.js';

/** The facts of an accepted connection a filter chain can match on. */
export interface ConnectionFacts {
  localAddress: string;
  localPort: number;
  remoteAddress: string;
  remotePort: number;
}

/** A chain's match, compiled once per listener. */
export interface CompiledMatch {
  match: ChainMatch;
  local: BlockList | null;
  source: BlockList | null;
  /** Higher wins among chains that match: destination port, then local address, then source. */
  specificity: number;
}

function blockList(ranges: Cidr[]): BlockList | null {
  if (ranges.length === 0) return null;
  const list = new BlockList();
  for (const r of ranges) list.addSubnet(r.prefix, r.len, isIPv6(r.prefix) ? 'ipv6' : 'ipv4');
  return list;
}

export function compileMatch(match: ChainMatch): CompiledMatch {
  return {
    match,
    local: blockList(match.prefixRanges),
    source: blockList(match.sourcePrefixRanges),
    specificity:
      (match.destinationPort !== null ? 4 : 0) +
      (match.prefixRanges.length > 0 ? 2 : 0) +
      (match.sourcePrefixRanges.length > 0 || match.sourcePorts.length > 0 ? 1 : 0),
  };
}

/** `::ffff:10.0.0.1` (a v4 peer on a dual-stack socket) is `10.0.0.1` for matching. */
function plain(address: string): string {
  return address.startsWith('::ffff:') && address.includes('.') ? address.slice(7) : address;
}

function inList(list: BlockList | null, address: string): boolean {
  if (!list) return true;
  const a = plain(address);
  return list.check(a, isIPv6(a) ? 'ipv6' : 'ipv4');
}

function matches(c: CompiledMatch, facts: ConnectionFacts): boolean {
  const m = c.match;
  if (m.destinationPort !== null && m.destinationPort !== facts.localPort) return false;
  if (m.sourcePorts.length > 0 && !m.sourcePorts.includes(facts.remotePort)) return false;
  return inList(c.local, facts.localAddress) && inList(c.source, facts.remoteAddress);
}

/**
 * The index of the chain that serves a connection, or -1 (`no_filter_chain_match`): among
 * the chains whose criteria all hold, the most specific one, the first on a tie.
 */
export function selectChain(chains: readonly CompiledMatch[], facts: ConnectionFacts): number {
  let best = -1;
  let bestScore = -1;
  for (const [i, c] of chains.entries()) {
    if (c.specificity > bestScore && matches(c, facts)) {
      best = i;
      bestScore = c.specificity;
    }
  }
  return best;
}
