/**
 * The pure parts of deciding who sent a request, as the reference's connection manager does:
 * IP literals parsed by hand (no regular expression per request), its notion of an internal
 * address, and the client address read from `x-forwarded-for` past the trusted hops.
 */

/** An IPv4 literal in dotted-quad form as a 32-bit number; -1 when `s` is not one. */
export function parseIpv4(s: string, from = 0, to = s.length): number {
  let value = 0;
  let part = -1;
  let parts = 0;
  let digits = 0;
  for (let i = from; i <= to; i++) {
    const c = i === to ? 46 /* . */ : s.charCodeAt(i);
    if (c >= 48 && c <= 57) {
      // No leading zeros: inet_pton reads "010" as no address at all.
      if (digits > 0 && part === 0) return -1;
      part = Math.max(part, 0) * 10 + (c - 48);
      digits += 1;
      if (part > 255) return -1;
    } else if (c === 46) {
      if (part < 0) return -1;
      value = value * 256 + part;
      parts += 1;
      part = -1;
      digits = 0;
    } else {
      return -1;
    }
  }
  return parts === 4 ? value : -1;
}

/**
 * An IPv6 literal as its eight 16-bit groups (a dotted IPv4 tail counts for two); null when
 * `s` is not one. Zone ids (`%eth0`) are not addresses a client can be at: refused.
 */
export function parseIpv6(s: string): number[] | null {
  const groups: number[] = [];
  let gap = -1;
  let i = 0;
  const n = s.length;
  if (n < 2) return null;
  if (s.charCodeAt(0) === 58) {
    if (s.charCodeAt(1) !== 58) return null;
    gap = 0;
    i = 2;
    if (i === n) return [0, 0, 0, 0, 0, 0, 0, 0];
  }
  while (i < n) {
    let j = i;
    let group = 0;
    while (j < n && j - i < 5) {
      const c = s.charCodeAt(j);
      const d = c >= 48 && c <= 57 ? c - 48 : c >= 97 && c <= 102 ? c - 87 : c >= 65 && c <= 70 ? c - 55 : -1;
      if (d < 0) break;
      group = group * 16 + d;
      j += 1;
    }
    if (j < n && s.charCodeAt(j) === 46) {
      // The last 32 bits written as IPv4.
      const v4 = parseIpv4(s, i, n);
      if (v4 < 0 || groups.length > 6) return null;
      groups.push(Math.floor(v4 / 65536), v4 % 65536);
      break;
    }
    if (j === i || j - i > 4) return null;
    groups.push(group);
    if (j === n) break;
    if (s.charCodeAt(j) !== 58) return null;
    if (j + 1 < n && s.charCodeAt(j + 1) === 58) {
      if (gap >= 0) return null;
      gap = groups.length;
      i = j + 2;
      if (i === n) break;
    } else {
      i = j + 1;
      if (i === n) return null;
    }
  }
  if (gap < 0) return groups.length === 8 ? groups : null;
  if (groups.length > 7) return null;
  const zeros = new Array<number>(8 - groups.length).fill(0);
  groups.splice(gap, 0, ...zeros);
  return groups;
}

/** Whether `s` is an IPv4 or IPv6 literal. */
export function isIpLiteral(s: string): boolean {
  return parseIpv4(s) >= 0 || parseIpv6(s) !== null;
}

const LOOPBACK_V4 = 0x7f000001;

/**
 * The reference's default notion of internal (its `Network::Utility::isInternalAddress`):
 * RFC 1918 (10/8, 172.16/12, 192.168/16) and 127.0.0.1 for IPv4; fd00::/8 (RFC 4193 local
 * addresses as assigned today) and ::1 for IPv6. `''` is a peer without an IP (a unix
 * socket): internal only with `internal_address_config.unix_sockets`.
 */
export function isInternalAddress(ip: string, unixSockets: boolean): boolean {
  if (ip === '') return unixSockets;
  const v4 = parseIpv4(ip);
  if (v4 >= 0) {
    const a = Math.floor(v4 / 0x1000000);
    const b = Math.floor(v4 / 0x10000) % 256;
    return a === 10 || (a === 192 && b === 168) || (a === 172 && b >= 16 && b <= 31) || v4 === LOOPBACK_V4;
  }
  const v6 = parseIpv6(ip);
  if (v6 === null) return false;
  if (Math.floor((v6[0] as number) / 256) === 0xfd) return true;
  return v6[7] === 1 && v6.every((g, i) => i === 7 || g === 0);
}

/** Whether the peer is a loopback address (127/8, ::1): the reference then appends its own address to XFF. */
export function isLoopbackAddress(ip: string): boolean {
  const v4 = parseIpv4(ip);
  if (v4 >= 0) return Math.floor(v4 / 0x1000000) === 127;
  const v6 = parseIpv6(ip);
  return v6 !== null && v6[7] === 1 && v6.every((g, i) => i === 7 || g === 0);
}

/** What `x-forwarded-for` says about the client. */
export interface XffAddress {
  /** The address `skip` entries from the right, trimmed; null when absent or not an IP literal. */
  address: string | null;
  /** The header held exactly that one address (and nothing was skipped). */
  single: boolean;
}

const NONE: XffAddress = { address: null, single: false };

/**
 * The reference's `getLastAddressFromXFF`: drop the rightmost `skip` entries (the trusted
 * proxies' own appends), then take the next one from the right. Too few entries, or an entry
 * that is not an IP literal, give no address: the request is then not trusted as internal.
 */
export function addressFromXff(xff: string | null, skip: number): XffAddress {
  if (xff === null) return NONE;
  let end = xff.length;
  for (let i = 0; i < skip; i++) {
    const comma = xff.lastIndexOf(',', end - 1);
    if (comma < 0) return NONE;
    end = comma;
  }
  const comma = end === 0 ? -1 : xff.lastIndexOf(',', end - 1);
  let start = comma + 1;
  // As the reference: a trailing comma leaves the whole remaining list, which is no address.
  if (comma >= 0 && start >= end) start = 0;
  while (start < end && isSpace(xff.charCodeAt(start))) start += 1;
  while (end > start && isSpace(xff.charCodeAt(end - 1))) end -= 1;
  const address = xff.slice(start, end);
  if (!isIpLiteral(address)) return NONE;
  return { address, single: comma < 0 && skip === 0 };
}

function isSpace(c: number): boolean {
  return c === 32 || c === 9;
}
