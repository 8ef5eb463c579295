import { randomFillSync } from 'node:crypto';
import type { JsonObject } from '../../../events/config.js';
import { nodeSettings } from '../../../reducers/settings/node.js';
import type { UpstreamRequestHead } from '../pool/types.js';
import type { CompiledRoute } from '../router/table.js';
import { HOP_BY_HOP } from '../codec/hop-by-hop.js';
import { type HttpRequest, setHeader } from '../codec/request.js';

/** The local cluster and node names (`--service-cluster`/`node.cluster`, `--service-node`/`node.id`). */
export interface LocalIdentity {
  cluster: string;
  node: string;
}

/** This proxy's names as the reference's local info has them: the options first, then the bootstrap's `node`. */
export function localIdentity(
  options: { serviceCluster: string; serviceNode: string },
  bootstrap: JsonObject | undefined,
): LocalIdentity {
  const node = nodeSettings(bootstrap);
  return { cluster: options.serviceCluster || node.cluster, node: options.serviceNode || node.id };
}

/** What the connection manager adds to every forwarded request. */
export interface ForwardingOptions {
  /** `add_user_agent`: the names the request carries upstream, or null (the default) for none. */
  userAgentIdentity?: LocalIdentity | null;
}

/**
 * `add_user_agent`, as the reference: the local cluster in
 * `x-proxy-downstream-service-cluster` and, when the request has none, in `user-agent`; the
 * local node in `x-proxy-downstream-service-node`. An empty name adds nothing.
 */
function addUserAgent(headers: string[], identity: LocalIdentity): void {
  if (identity.cluster) {
    setHeader(headers, 'x-proxy-downstream-service-cluster', identity.cluster);
    let agent = '';
    for (let i = 0; i < headers.length && !agent; i += 2)
      if (headers[i] === 'user-agent') agent = headers[i + 1] as string;
    if (!agent) setHeader(headers, 'user-agent', identity.cluster);
  }
  if (identity.node) setHeader(headers, 'x-proxy-downstream-service-node', identity.node);
}

/** Random bytes for 256 request ids, drawn in one call and refilled when used up. */
const idRandom = Buffer.alloc(16 * 256);
let idNext = idRandom.length;
/** The text of the id being made: written in place, then read as one string. */
const idText = Buffer.alloc(36);
const HEX = Buffer.from('0123456789abcdef', 'latin1');

/**
 * A random (version 4) UUID for `x-request-id`, as `crypto.randomUUID` makes it but written
 * into one Buffer and read out as one string: `randomUUID` builds it by string concatenation,
 * about 600 bytes of garbage per request.
 */
export function requestId(): string {
  if (idNext === idRandom.length) {
    randomFillSync(idRandom);
    idNext = 0;
  }
  const r = idRandom;
  const at = idNext;
  idNext += 16;
  let w = 0;
  for (let i = 0; i < 16; i++) {
    if (i === 4 || i === 6 || i === 8 || i === 10) idText[w++] = 45; // '-'
    let byte = r[at + i] as number;
    if (i === 6)
      byte = (byte & 0x0f) | 0x40; // version 4
    else if (i === 8) byte = (byte & 0x3f) | 0x80; // RFC 4122 variant
    idText[w++] = HEX[byte >> 4] as number;
    idText[w++] = HEX[byte & 15] as number;
  }
  return idText.toString('latin1', 0, 36);
}

/**
 * Slots for what is appended to the upstream head's fields after the copy: the router's
 * `x-proxy-expected-rq-timeout-ms` (filters/router/route.ts) and one more field.
 */
const UPSTREAM_FIELDS_ROOM = 4;

/**
 * A copy of `headers` with `room` free slots past them: an exact copy (`slice`) is copied
 * again, half as large again and 16 slots more, by the first `push`, once per request.
 * V8 keeps the capacity when the length is set below it.
 */
function copyWithRoom(headers: readonly string[], room: number): string[] {
  const n = headers.length;
  const out: string[] = new Array(n + room);
  for (let i = 0; i < n; i++) out[i] = headers[i] as string;
  out.length = n;
  return out;
}

/**
 * The request head as the upstream sees it: the request's headers (the edge step,
 * `applyEdge`, already set the forwarding ones), `add_user_agent`'s, and the route's prefix
 * and host rewrites. The codec already dropped the hop-by-hop headers.
 */
export function upstreamRequestHead(
  req: HttpRequest,
  route: CompiledRoute,
  options: ForwardingOptions,
): UpstreamRequestHead {
  const headers = copyWithRoom(req.headers, UPSTREAM_FIELDS_ROOM);
  if (options.userAgentIdentity) addUserAgent(headers, options.userAgentIdentity);
  let path = req.path;
  if (route.prefixRewrite !== null && route.prefix !== null)
    path = route.prefixRewrite + path.slice(route.prefix.length);
  return {
    method: req.method,
    path,
    authority: route.hostRewrite ?? req.authority,
    headers,
    contentLength: req.contentLength,
    hasBody: req.hasBody,
  };
}

/** The time the upstream took, set on its responses unless the router's `suppress_envoy_headers`. */
export const SERVICE_TIME_HEADER = 'x-proxy-upstream-service-time';

/** `server_header_transformation`: what becomes of the upstream's `server`. */
export type ServerHeader = 'OVERWRITE' | 'APPEND_IF_ABSENT' | 'PASS_THROUGH';

/**
 * The fields an HTTP/1 upstream's `Connection` names (lowercase) besides the fixed hop-by-hop
 * ones, or null when it names none: they were for the upstream's hop only (RFC 9110 7.6.1), as
 * `Connection: X-Secret` says.
 */
export function connectionNominated(headers: readonly string[]): Set<string> | null {
  let nominated: Set<string> | null = null;
  for (let i = 0; i < headers.length; i += 2) {
    if (headers[i] !== 'connection') continue;
    const value = headers[i + 1] as string;
    // What nearly every kept-alive response says: a split, a Set and its strings made for it
    // were about 0.3 KB a proxied request, to name a field that is hop-by-hop anyway.
    if (KEEP_ALIVE_ONLY.test(value)) continue;
    for (const option of value.split(',')) {
      const name = option.trim().toLowerCase();
      if (name === '' || HOP_BY_HOP.has(name)) continue;
      nominated ??= new Set();
      nominated.add(name);
    }
  }
  return nominated;
}

/** A `Connection` value naming `keep-alive` alone. */
const KEEP_ALIVE_ONLY = /^[ \t]*keep-alive[ \t]*$/i;

/**
 * The response headers the client gets from an upstream's: hop-by-hop headers (those its
 * `Connection` names too) and the length dropped (the downstream codec frames the body itself), `server` replaced by ours
 * (`OVERWRITE`), set only when the upstream sent none (`APPEND_IF_ABSENT`) or left as it came
 * (`PASS_THROUGH`), `x-proxy-upstream-service-time` set to `serviceTime` (ms) unless it is null.
 */
export function downstreamResponseHeaders(
  headers: readonly string[],
  serverName: string,
  serviceTime: string | null = null,
  serverHeader: ServerHeader = 'OVERWRITE',
): string[] {
  // Sized for all that may be added, then cut to what was (V8 keeps the capacity): pushed
  // one by one, it grew twice per response.
  const out: string[] = new Array(headers.length + 4);
  let n = 0;
  let upstreamServer = false;
  const nominated = connectionNominated(headers);
  for (let i = 0; i < headers.length; i += 2) {
    const name = headers[i] as string;
    if (HOP_BY_HOP.has(name) || name === 'content-length') continue;
    if (nominated?.has(name)) continue;
    if (name === 'server') {
      if (serverHeader === 'OVERWRITE') continue;
      upstreamServer = true;
    }
    if (serviceTime !== null && name === SERVICE_TIME_HEADER) continue;
    out[n++] = name;
    out[n++] = headers[i + 1] as string;
  }
  if (serverHeader === 'OVERWRITE' || (serverHeader === 'APPEND_IF_ABSENT' && !upstreamServer)) {
    out[n++] = 'server';
    out[n++] = serverName;
  }
  if (serviceTime !== null) {
    out[n++] = SERVICE_TIME_HEADER;
    out[n++] = serviceTime;
  }
  out.length = n;
  return out;
}
