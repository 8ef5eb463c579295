import type { Scope } from '../../stats/store.js';
import type { StreamInfo } from '../access-log/stream-info.js';

/** The value of `name` in a flat header list (the last one), or undefined. */
export function flatValue(headers: readonly string[], name: string): string | undefined {
  let out: string | undefined;
  for (let i = 0; i < headers.length; i += 2) if (headers[i] === name) out = headers[i + 1];
  return out;
}

/** `application/grpc` or `application/grpc+<codec>`, as the reference's `hasGrpcContentType`. */
export function isGrpcContentType(value: string | undefined): boolean {
  if (value === undefined || !value.startsWith('application/grpc')) return false;
  return value.length === 16 || value.charCodeAt(16) === 43 /* + */;
}

/**
 * `/<service>/<method>` of a gRPC path, or null for any other shape (the reference splits on
 * `/`, dropping empty pieces, and wants exactly two).
 */
export function serviceAndMethod(path: string): { service: string; method: string } | null {
  const parts = path.split('/').filter((p) => p !== '');
  if (parts.length !== 2) return null;
  return { service: parts[0] as string, method: parts[1] as string };
}

/**
 * The stats scope of the cluster a request went to (`info.upstreamCluster`), where the gRPC
 * filters count its calls; null before or without one, as the reference without cluster info.
 */
export type ClusterScope = (info: StreamInfo) => Scope | null;

/**
 * The per-method counters the reference's gRPC filters keep under their cluster's scope:
 * `<protocol>.<service>.<method>.<grpc-status>`, `.success` or `.failure` (status 0 or not) and
 * `.total`, charged once per response header block that carries `grpc-status`.
 */
export class GrpcStatTracker {
  constructor(
    private readonly prefix: string,
    private readonly scope: () => Scope | null,
  ) {}

  /**
   * A tracker for a request to `path` under `protocol` (`grpc`, `grpc-web`); null when the path
   * names no service and method. `scope` gives the routed cluster's scope when the response
   * comes (null: no cluster, nothing counted, as the reference without cluster info).
   */
  static forPath(protocol: string, path: string, scope: () => Scope | null): GrpcStatTracker | null {
    const q = path.indexOf('?');
    const named = serviceAndMethod(q < 0 ? path : path.slice(0, q));
    return named === null
      ? null
      : new GrpcStatTracker(`${protocol}.${named.service}.${named.method}.`, scope);
  }

  /** Counts the `grpc-status` of a header or trailer block, when it has one. */
  charge(headers: readonly string[]): void {
    const status = flatValue(headers, 'grpc-status');
    const scope = status === undefined ? null : this.scope();
    if (status === undefined || scope === null) return;
    scope.counter(this.prefix + status).inc();
    scope.counter(this.prefix + (status === '0' ? 'success' : 'failure')).inc();
    scope.counter(`${this.prefix}total`).inc();
  }
}

/** The status the rate limit filters answer with `rate_limited_as_resource_exhausted`. */
export const GRPC_RESOURCE_EXHAUSTED = 8;

/** The reference's `httpToGrpcStatus`: the gRPC status a local reply's HTTP status stands for. */
export function grpcStatusForHttp(status: number): number {
  switch (status) {
    case 400:
      return 13; // INTERNAL
    case 401:
      return 16; // UNAUTHENTICATED
    case 403:
      return 7; // PERMISSION_DENIED
    case 404:
      return 12; // UNIMPLEMENTED
    case 429:
    case 502:
    case 503:
    case 504:
      return 14; // UNAVAILABLE
    default:
      return 2; // UNKNOWN
  }
}

/** `grpc-message` as the gRPC spec writes it: UTF-8 bytes outside `' '`..`'~'`, and `%`, as `%XX`. */
export function percentEncode(text: string): string {
  if (/^[ -$&-~]*$/.test(text)) return text;
  let out = '';
  for (const byte of Buffer.from(text)) {
    out +=
      byte < 0x20 || byte > 0x7e || byte === 0x25
        ? `%${byte.toString(16).toUpperCase().padStart(2, '0')}`
        : String.fromCharCode(byte);
  }
  return out;
}

/**
 * The head of a local reply to a gRPC request, as the reference's connection manager sends it:
 * a trailers-only response (200, no body) with `content-type: application/grpc`, the status
 * mapped to `grpc-status` (or `grpcStatus`, a filter's own) and the text in `grpc-message`,
 * then `extra` and our `server` header.
 */
export function grpcLocalReplyHead(
  serverName: string,
  status: number,
  body: string | Buffer,
  extra: readonly string[],
  grpcStatus = grpcStatusForHttp(status),
): string[] {
  const headers = ['content-type', 'application/grpc', 'grpc-status', String(grpcStatus)];
  const text = typeof body === 'string' ? body : body.toString();
  if (text !== '') headers.push('grpc-message', percentEncode(text));
  headers.push(...extra);
  if (serverName) headers.push('server', serverName);
  return headers;
}
