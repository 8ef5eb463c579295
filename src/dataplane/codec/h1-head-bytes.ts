/*
 * HTTP/1 heads written straight into the Buffer that goes to the socket, a byte per
 * character of their latin1 strings (src/dataplane/codec/head-text.ts). A head built by
 * string concatenation left its pieces and its flattened copy as garbage (about 0.7 KB for
 * each of a request's two heads) and was then copied out again by a native latin1 write.
 */

/** `text`'s bytes at `b[at]`; returns the offset after them. */
export function putText(b: Uint8Array, at: number, text: string): number {
  for (let i = 0; i < text.length; i++) b[at + i] = text.charCodeAt(i);
  return at + text.length;
}

/** How many bytes `putFields` writes for a flat `[name, value, ...]` list. */
export function fieldsLength(fields: readonly string[]): number {
  let n = 0;
  for (let i = 0; i < fields.length; i++) n += (fields[i] as string).length + 2;
  return n;
}

/** `name: value\r\n` for each field of a flat list at `b[at]`; returns the offset after them. */
export function putFields(b: Uint8Array, at: number, fields: readonly string[]): number {
  for (let i = 0; i < fields.length; i += 2) {
    at = putText(b, at, fields[i] as string);
    b[at++] = 58; // ':'
    b[at++] = 32;
    at = putText(b, at, fields[i + 1] as string);
    b[at++] = 13;
    b[at++] = 10;
  }
  return at;
}

/**
 * A request head: the request line, `host`, the fields, then `framing` (its framing field,
 * if any, and the empty line).
 */
export function requestHeadBytes(
  method: string,
  path: string,
  authority: string,
  fields: readonly string[],
  framing: string,
): Buffer {
  const b = Buffer.allocUnsafe(
    method.length + path.length + authority.length + 20 + fieldsLength(fields) + framing.length,
  );
  let at = putText(b, 0, method);
  b[at++] = 32;
  at = putText(b, at, path);
  at = putText(b, at, ' HTTP/1.1\r\nhost: ');
  at = putText(b, at, authority);
  b[at++] = 13;
  b[at++] = 10;
  putText(b, putFields(b, at, fields), framing);
  return b;
}

const CONTENT_LENGTH = 'content-length: ';

/**
 * A response head: the status line, the fields, `content-length: length` unless `length` is
 * negative, then `framing` (other framing and connection fields, the empty line); `body`, when
 * given, right after it in the same Buffer. The length is written here rather than given as
 * text: a string made for it was two (the field, then the field with the rest) per response.
 */
export function responseHeadBytes(
  version: string,
  status: number,
  reason: string,
  fields: readonly string[],
  length: number,
  framing: string,
  body: Buffer | null,
): Buffer {
  const code = String(status);
  const digits = length < 0 ? '' : String(length);
  const lengthField = length < 0 ? 0 : CONTENT_LENGTH.length + digits.length + 2;
  const headLength =
    version.length + code.length + reason.length + 4 + fieldsLength(fields) + lengthField + framing.length;
  const b = Buffer.allocUnsafe(headLength + (body?.length ?? 0));
  let at = putText(b, 0, version);
  b[at++] = 32;
  at = putText(b, at, code);
  b[at++] = 32;
  at = putText(b, at, reason);
  b[at++] = 13;
  b[at++] = 10;
  at = putFields(b, at, fields);
  if (length >= 0) {
    at = putText(b, putText(b, at, CONTENT_LENGTH), digits);
    b[at++] = 13;
    b[at++] = 10;
  }
  putText(b, at, framing);
  body?.copy(b, headLength);
  return b;
}
