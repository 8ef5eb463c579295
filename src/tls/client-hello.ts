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
const MAX_CLIENT_HELLO = 64 * 1024;
/** Bytes read before giving up on a ClientHello cut into very many (or empty) records. */
const MAX_PEEK = 4 * MAX_CLIENT_HELLO;

const HANDSHAKE_RECORD = 0x16;
const CLIENT_HELLO = 0x01;
const EXT_SERVER_NAME = 0;
const EXT_ALPN = 16;

/**
 * Reads a connection's first bytes as they arrive, record by record. Each byte is copied a
 * bounded number of times: bytes wait until the record they belong to is whole, so a
 * ClientHello dripped a byte at a time, or cut into many tiny records, costs linear time.
 */
export class ClientHelloReader {
  /** Bytes of the record not yet whole. */
  private pending: Buffer[] = [];
  private pendingLength = 0;
  /** `pendingLength` at which the next record (or its header) is whole. */
  private need = 1;
  /** The handshake message so far, from the records read. */
  private readonly fragments: Buffer[] = [];
  private have = 0;
  /** Length of the handshake message with its 4-byte header, once that header is in. */
  private message = -1;
  private read = 0;
  private result: HelloScan | null = null;

  push(chunk: Buffer): HelloScan {
    if (this.result) return this.result;
    this.pending.push(chunk);
    this.pendingLength += chunk.length;
    this.read += chunk.length;
    if (this.pendingLength < this.need)
      return this.read > MAX_PEEK ? this.decide(unreadable()) : { kind: 'more' };
    const data = Buffer.concat(this.pending, this.pendingLength);
    let at = 0;
    for (;;) {
      const left = data.length - at;
      // Not a handshake record (checked as soon as the bytes are there): plain text, or a
      // ClientHello broken off by something else.
      const broken = (left >= 1 && data[at] !== HANDSHAKE_RECORD) || (left >= 2 && data[at + 1] !== 3);
      if (broken) return this.decide(this.fragments.length === 0 ? { kind: 'plain' } : unreadable());
      if (left < 5) {
        this.need = 5;
        break;
      }
      const len = data.readUInt16BE(at + 3);
      if (left < 5 + len) {
        this.need = 5 + len;
        break;
      }
      this.fragments.push(data.subarray(at + 5, at + 5 + len));
      this.have += len;
      at += 5 + len;
      if (this.message < 0 && this.have >= 4) {
        const head = Buffer.concat(this.fragments).subarray(0, 4);
        if (head[0] !== CLIENT_HELLO) return this.decide(unreadable());
        this.message = 4 + head.readUIntBE(1, 3);
        if (this.message > MAX_CLIENT_HELLO) return this.decide(unreadable());
      }
      if (this.message >= 0 && this.have >= this.message)
        return this.decide(parseHello(Buffer.concat(this.fragments).subarray(4, this.message)));
    }
    const rest = data.subarray(at);
    this.pending = [rest];
    this.pendingLength = rest.length;
    return this.read > MAX_PEEK ? this.decide(unreadable()) : { kind: 'more' };
  }

  private decide(result: HelloScan): HelloScan {
    this.result = result;
    this.pending = [];
    return result;
  }
}

/** Scans bytes read so far in one go; `more` until the whole ClientHello is there. */
export function scanClientHello(data: Buffer): HelloScan {
  return new ClientHelloReader().push(data);
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
