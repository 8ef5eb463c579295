/**
 * Reads what chain selection needs from the first bytes of a connection, as the
 * reference's TLS inspector does: whether it starts a TLS handshake, and then the
 * ClientHello's server name (SNI) and offered application protocols (ALPN). Pure.
 */

export type HelloScan =
  | { kind: 'more' }
  | { kind: 'plain' }
  | { kind: 'tls'; serverName: string; alpn: string[] };

/** The reference's limit on a ClientHello it inspects. */
export const MAX_CLIENT_HELLO = 64 * 1024;

const HANDSHAKE_RECORD = 0x16;
const CLIENT_HELLO = 0x01;
const EXT_SERVER_NAME = 0;
const EXT_ALPN = 16;

/** Scans the bytes read so far; `more` until the whole ClientHello is there. */
export function scanClientHello(data: Buffer): HelloScan {
  if (data.length === 0) return { kind: 'more' };
  if (data[0] !== HANDSHAKE_RECORD) return { kind: 'plain' };
  if (data.length >= 2 && data[1] !== 3) return { kind: 'plain' };
  // The handshake message may span several records: join their fragments.
  const fragments: Buffer[] = [];
  let have = 0;
  let at = 0;
  while (at + 5 <= data.length) {
    if (data[at] !== HANDSHAKE_RECORD) return have === 0 ? { kind: 'plain' } : unreadable();
    const len = data.readUInt16BE(at + 3);
    if (at + 5 + len > data.length) break;
    fragments.push(data.subarray(at + 5, at + 5 + len));
    have += len;
    at += 5 + len;
    const hs = Buffer.concat(fragments);
    if (hs.length >= 4) {
      if (hs[0] !== CLIENT_HELLO) return unreadable();
      const need = 4 + hs.readUIntBE(1, 3);
      if (need > MAX_CLIENT_HELLO) return unreadable();
      if (hs.length >= need) return parseHello(hs.subarray(4, need));
    }
  }
  if (data.length > MAX_CLIENT_HELLO + 5 * 16) return unreadable();
  return { kind: 'more' };
}

/** TLS, but nothing to match on (a ClientHello too large or malformed: the handshake will say). */
function unreadable(): HelloScan {
  return { kind: 'tls', serverName: '', alpn: [] };
}

function parseHello(body: Buffer): HelloScan {
  let p = 2 + 32;
  if (p + 1 > body.length) return unreadable();
  p += 1 + (body[p] as number);
  if (p + 2 > body.length) return unreadable();
  p += 2 + body.readUInt16BE(p);
  if (p + 1 > body.length) return unreadable();
  p += 1 + (body[p] as number);
  if (p + 2 > body.length) return { kind: 'tls', serverName: '', alpn: [] };
  const end = Math.min(body.length, p + 2 + body.readUInt16BE(p));
  p += 2;
  let serverName = '';
  const alpn: string[] = [];
  while (p + 4 <= end) {
    const type = body.readUInt16BE(p);
    const len = body.readUInt16BE(p + 2);
    const ext = body.subarray(p + 4, Math.min(end, p + 4 + len));
    p += 4 + len;
    if (type === EXT_SERVER_NAME) serverName = hostName(ext);
    else if (type === EXT_ALPN) alpn.push(...protocols(ext));
  }
  return { kind: 'tls', serverName, alpn };
}

function hostName(ext: Buffer): string {
  let p = 2;
  while (p + 3 <= ext.length) {
    const type = ext[p] as number;
    const len = ext.readUInt16BE(p + 1);
    if (type === 0 && p + 3 + len <= ext.length)
      return ext.toString('latin1', p + 3, p + 3 + len).toLowerCase();
    p += 3 + len;
  }
  return '';
}

function protocols(ext: Buffer): string[] {
  const out: string[] = [];
  let p = 2;
  while (p + 1 <= ext.length) {
    const len = ext[p] as number;
    if (p + 1 + len > ext.length) break;
    out.push(ext.toString('latin1', p + 1, p + 1 + len));
    p += 1 + len;
  }
  return out;
}
