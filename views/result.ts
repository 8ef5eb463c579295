/** What every view returns; the admin adapter writes it out unchanged. */
export interface ViewResult {
  status: number;
  contentType: string;
  body: string | Buffer;
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
