/** What the compressor and decompressor filters read of a flat header list. */

/** A flat header list's value of `name` (repeats joined by `,`), or undefined. */
export function fieldValue(headers: readonly string[], name: string): string | undefined {
  let out: string | undefined;
  for (let i = 0; i < headers.length; i += 2)
    if (headers[i] === name) out = out === undefined ? headers[i + 1] : `${out},${headers[i + 1]}`;
  return out;
}

/** Whether a comma-separated header value holds `token` (case-insensitive). */
export function hasToken(value: string | undefined, token: string): boolean {
  return value?.split(',').some((t) => t.trim().toLowerCase() === token) === true;
}

/** `Cache-Control: no-transform`: the body must reach the other side as it is. */
export function noTransform(headers: readonly string[]): boolean {
  return hasToken(fieldValue(headers, 'cache-control'), 'no-transform');
}

/** Whether a response of this status to this method carries a body (none to HEAD, 1xx, 204, 304, or a declared 0). */
export function responseHasBody(status: number, method: string, length: number): boolean {
  return !(status < 200 || status === 204 || status === 304) && method !== 'HEAD' && length !== 0;
}
