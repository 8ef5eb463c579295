import type * as http2 from 'node:http2';

/**
 * `out` with a flat `[name, value, ...]` list added as `node:http2` sends it. A repeated name
 * becomes a list of values (one header line each), or with `join` one value joined by it
 * (cookies by `; `, as RFC 9113 8.2.3 joins them).
 */
export function withFlatHeaders(
  out: http2.OutgoingHttpHeaders,
  flat: readonly string[],
  join?: string,
): http2.OutgoingHttpHeaders {
  for (let i = 0; i < flat.length; i += 2) {
    const name = flat[i] as string;
    const prev = out[name];
    const value = flat[i + 1] as string;
    if (prev === undefined) out[name] = value;
    else if (join !== undefined) out[name] = `${prev}${name === 'cookie' ? '; ' : join}${value}`;
    else out[name] = Array.isArray(prev) ? [...prev, value] : [String(prev), value];
  }
  return out;
}
