/**
 * proto3 JSON's "default values are omitted": drops `undefined`, `''`, `0`, `false`,
 * empty lists and objects left empty, recursively. Values meant to print even when zero
 * must be encoded first (64-bit integers are strings, so `"0"` would stay: callers omit it).
 */
export function omitDefaults<T>(value: T): T {
  if (Array.isArray(value)) return value.map((v) => omitDefaults(v)) as T;
  if (value === null || typeof value !== 'object') return value;
  const out: Record<string, unknown> = {};
  for (const [key, inner] of Object.entries(value)) {
    const v = omitDefaults(inner);
    if (v === undefined || v === '' || v === 0 || v === false) continue;
    if (Array.isArray(v) && v.length === 0) continue;
    if (v !== null && typeof v === 'object' && !Array.isArray(v) && Object.keys(v).length === 0) continue;
    out[key] = v;
  }
  return out as T;
}

/** `ip:port` or `[v6]:port` as a proto `Address` (`protocol: TCP` is the default, so absent). */
export function socketAddress(hostPort: string): { socket_address: { address: string; port_value: number } } {
  const match = /^\[(.*)\]:(\d+)$/.exec(hostPort) ?? /^(.*):(\d+)$/.exec(hostPort);
  return { socket_address: { address: match?.[1] ?? hostPort, port_value: Number(match?.[2] ?? 0) } };
}

/** A Timestamp as proto3 JSON prints it: RFC 3339 in UTC, with milliseconds only when non-zero. */
export function timestamp(ms: number): string {
  return new Date(ms).toISOString().replace('.000Z', 'Z');
}
