import { jsonChunks } from './json-chunks.js';

export { CHUNK_CHARS } from './json-chunks.js';

/**
 * A body produced piece by piece (pieces of about `CHUNK_CHARS`): the admin writes each as
 * it comes and lets the event loop run between them, so a 100 MB render neither blocks
 * other requests nor sits in memory whole.
 */
export type Chunks = Iterable<string>;

/** What every view returns; the admin adapter writes it out unchanged. */
export interface ViewResult {
  status: number;
  contentType: string;
  body: string | Buffer;
}

/** A view's answer whose body may come in pieces (large renders the admin streams). */
export interface StreamedResult {
  status: number;
  contentType: string;
  body: string | Buffer | Chunks;
}

/** A body as one string (bundles, tests): streamed pieces joined. */
export function bodyText(body: string | Buffer | Chunks): string {
  if (typeof body === 'string') return body;
  if (Buffer.isBuffer(body)) return body.toString();
  return [...body].join('');
}

export const TEXT = 'text/plain; charset=UTF-8';
export const JSON_TYPE = 'application/json';
export const HTML = 'text/html; charset=UTF-8';

/** A plain-text answer. */
export function text(body: string, status = 200): ViewResult {
  return { status, contentType: TEXT, body };
}

/**
 * A JSON answer pretty-printed the way the reference prints protobuf JSON: one-space
 * indent and a trailing newline.
 */
export function json(value: unknown, status = 200): ViewResult {
  return { status, contentType: JSON_TYPE, body: `${JSON.stringify(value, null, 1)}\n` };
}

/**
 * `json(omitDefaults(value))` streamed: the same text, produced in pieces without the
 * whole document or a defaults-free copy of `value` in memory (see `jsonChunks`).
 */
export function streamedProtoJson(value: unknown, status = 200): StreamedResult {
  return { status, contentType: JSON_TYPE, body: jsonChunks(value, true) };
}
