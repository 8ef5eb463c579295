/**
 * What the reference's HTTP inspector reads from a plain-text connection's first bytes: the
 * HTTP/2 preface (`h2c`) or an HTTP/1.x request line (`http/1.1`, `http/1.0`), else nothing.
 * It reads no further than the first line, and at most `MAX_SNIFF` bytes, as the reference.
 */

const H2_PREFACE = Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n', 'latin1');
/** The reference inspects at most this many bytes. */
export const MAX_SNIFF = 8192;
/** A request method: an HTTP token. */
const METHOD = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

export type Sniff = { kind: 'more' } | { kind: 'done'; protocols: string[] };

const NONE: Sniff = { kind: 'done', protocols: [] };

/** The application protocol the first `bytes` of a plain-text connection show, or 'more' to wait. */
export function sniffHttp(bytes: Buffer): Sniff {
  const preface = bytes.subarray(0, H2_PREFACE.length);
  if (preface.equals(H2_PREFACE.subarray(0, preface.length))) {
    return preface.length === H2_PREFACE.length ? { kind: 'done', protocols: ['h2c'] } : { kind: 'more' };
  }
  const end = bytes.indexOf('\r\n', 0, 'latin1');
  if (end < 0) return bytes.length >= MAX_SNIFF ? NONE : { kind: 'more' };
  const parts = bytes.subarray(0, end).toString('latin1').split(' ');
  if (parts.length !== 3 || !METHOD.test(parts[0] as string) || parts[1] === '') return NONE;
  if (parts[2] === 'HTTP/1.1') return { kind: 'done', protocols: ['http/1.1'] };
  if (parts[2] === 'HTTP/1.0') return { kind: 'done', protocols: ['http/1.0'] };
  return NONE;
}
