import type { JsonObject } from '../../../events/config.js';
import { numberOr, objectOf } from '../../../reducers/settings/values.js';
import { acting, checkFields, type FieldTable } from '../../bootstrap/honoured.js';
import type { Report } from '../../bootstrap/report.js';
import { joinHostPort, type StreamInfo } from '../access-log/stream-info.js';
import { type HttpRequest, INTERNAL_HEADER, removeHeader } from '../codec/request.js';
import { addressFromXff, isInternalAddress, isLoopbackAddress, type XffAddress } from './client-address.js';
import { requestId } from './headers.js';
import { headerValueField } from '../router/header-mutation.js';

/**
 * The connection manager's trust settings (docs/edge.md): who the client is, whether it is
 * internal, and so which control headers it may send.
 */
export interface EdgeSpec {
  /** `use_remote_address`: the peer is the client (an edge proxy); else `x-forwarded-for` says. */
  useRemoteAddress: boolean;
  /** `xff_num_trusted_hops`: proxies in front of this one whose `x-forwarded-for` appends are trusted. */
  xffNumTrustedHops: number;
  /** `skip_xff_append`: with `use_remote_address`, leave `x-forwarded-for` as it came. */
  skipXffAppend: boolean;
  /** `internal_address_config.unix_sockets`: a peer on a unix socket is internal. */
  unixSocketsInternal: boolean;
  /** `generate_request_id` (default true): every request leaves with an `x-request-id`. */
  generateRequestId: boolean;
  /** `preserve_external_request_id`: keep an external client's `x-request-id` rather than replace it. */
  preserveExternalRequestId: boolean;
  /** `via`: appended to the request's and the response's `via`; '' for none. */
  via: string;
  /** `forward_client_cert_details: ALWAYS_FORWARD_ONLY`: keep the client's `x-forwarded-client-cert` (else removed, SANITIZE). */
  forwardClientCert: boolean;
}

/** `common_http_protocol_options.headers_with_underscores_action`, as the reference names it. */
export type UnderscoreAction = 'ALLOW' | 'REJECT_REQUEST' | 'DROP_HEADER';

/**
 * Applies `headers_with_underscores_action` to a request's headers (in place): the number of
 * headers dropped, or -1 when the request must be rejected. Names with `_` are how a client
 * smuggles a header past a proxy that maps `-` and `_` alike (CGI), hence the option.
 */
export function underscoreHeaders(headers: string[], action: UnderscoreAction): number {
  let dropped = 0;
  let w = 0;
  for (let r = 0; r < headers.length; r += 2) {
    const name = headers[r] as string;
    if (name.includes('_')) {
      if (action === 'REJECT_REQUEST') return -1;
      if (action === 'DROP_HEADER') {
        dropped++;
        continue;
      }
    }
    headers[w] = name;
    headers[w + 1] = headers[r + 1] as string;
    w += 2;
  }
  headers.length = w;
  return dropped;
}

/** The HCM fields this compile step reads (the rest of the message is `hcm-config.ts`'s). */
export const EDGE_FIELDS = [
  'use_remote_address',
  'xff_num_trusted_hops',
  'skip_xff_append',
  'internal_address_config',
  'generate_request_id',
  'preserve_external_request_id',
  'via',
  'forward_client_cert_details',
] as const;

/** `forward_client_cert_details` values this build serves; the others need the client certificate's details. */
const XFCC_MODES = ['SANITIZE', 'ALWAYS_FORWARD_ONLY'];

const INTERNAL_ADDRESS_FIELDS: FieldTable = acting('unix_sockets');

export const FIELD_TABLES = { InternalAddressConfig: INTERNAL_ADDRESS_FIELDS };

export function compileEdge(config: JsonObject, path: string, report: Report): EdgeSpec {
  const internal = objectOf(config.internal_address_config);
  checkFields(
    internal,
    `${path}.internal_address_config`,
    report,
    INTERNAL_ADDRESS_FIELDS,
    'InternalAddressConfig',
  );
  const xfcc =
    typeof config.forward_client_cert_details === 'string' ? config.forward_client_cert_details : 'SANITIZE';
  if (!XFCC_MODES.includes(xfcc))
    report.unsupported(
      `${path}.forward_client_cert_details`,
      `forward_client_cert_details ${xfcc} (x-forwarded-client-cert from the client certificate) is not implemented; SANITIZE and ALWAYS_FORWARD_ONLY are`,
    );
  return {
    useRemoteAddress: config.use_remote_address === true,
    xffNumTrustedHops: numberOr(config.xff_num_trusted_hops, 0),
    skipXffAppend: config.skip_xff_append === true,
    unixSocketsInternal: internal.unix_sockets === true,
    generateRequestId: config.generate_request_id !== false,
    preserveExternalRequestId: config.preserve_external_request_id === true,
    via: headerValueField(config.via, `${path}.via`, report),
    forwardClientCert: xfcc === 'ALWAYS_FORWARD_ONLY',
  };
}

// What a request header is to the edge, one bit each (a name has one kind, maybe with ROUTER).
/** `x-*-internal`: only this proxy says so; always replaced. */
const K_INTERNAL = 1;
/** A control header only an internal request may send (the reference's list). */
const K_CONTROL = 2;
/** A header an edge request may not bring from outside (set by the edge itself, or describing the caller). */
const K_EDGE = 4;
const K_XFF = 8;
const K_XFP = 16;
const K_REQUEST_ID = 32;
/** With K_CONTROL: the router reads it (src/dataplane/router/request-controls.ts). */
const K_ROUTER = 64;
/** `x-forwarded-client-cert`: removed unless `forward_client_cert_details` forwards it. */
const K_XFCC = 128;

/** Header name suffixes, in both spellings (`x-proxy-`, and the reference's `x-envoy-`). */
const SUFFIX_KINDS: ReadonlyArray<[string, number]> = [
  ['internal', K_INTERNAL],
  ['retry-on', K_CONTROL | K_ROUTER],
  ['retry-grpc-on', K_CONTROL | K_ROUTER],
  ['max-retries', K_CONTROL | K_ROUTER],
  ['retriable-status-codes', K_CONTROL | K_ROUTER],
  ['upstream-rq-timeout-ms', K_CONTROL | K_ROUTER],
  ['upstream-rq-per-try-timeout-ms', K_CONTROL | K_ROUTER],
  ['upstream-rq-timeout-alt-response', K_CONTROL | K_ROUTER],
  ['retriable-header-names', K_CONTROL],
  ['upstream-alt-stat-name', K_CONTROL],
  ['expected-rq-timeout-ms', K_CONTROL | K_ROUTER],
  ['force-trace', K_CONTROL],
  ['ip-tags', K_CONTROL],
  ['original-url', K_CONTROL],
  ['hedge-on-per-try-timeout', K_CONTROL],
  ['decorator-operation', K_EDGE],
  ['downstream-service-cluster', K_EDGE],
  ['downstream-service-node', K_EDGE],
  ['external-address', K_EDGE],
];

/** Every header name the edge looks at, with its kind: one lookup per `x-` header of a request. */
const HEADER_KINDS: ReadonlyMap<string, number> = new Map<string, number>([
  ...SUFFIX_KINDS.flatMap(
    ([suffix, kind]): Array<[string, number]> => [
      [`x-proxy-${suffix}`, kind],
      [`x-envoy-${suffix}`, kind],
    ],
  ),
  ['x-forwarded-for', K_XFF],
  ['x-forwarded-proto', K_XFP],
  ['x-request-id', K_REQUEST_ID],
  ['x-forwarded-client-cert', K_XFCC],
]);

/** The names the edge sets, spelled as this proxy spells its own headers (`INTERNAL_HEADER` too). */
export const EXTERNAL_ADDRESS_HEADER = 'x-proxy-external-address';

/** Bits of `applyEdge`'s answer. */
export const EDGE_INTERNAL = 1;
/** An external request reaching an edge (`use_remote_address`): the first hop into the trusted network. */
export const EDGE_EXTERNAL = 2;
/** An internal request carrying router control headers (`x-proxy-retry-on`, timeouts, ...). */
export const EDGE_ROUTER_HEADERS = 4;

const NONE: readonly string[] = [];

/** The name's kind, or 0; a cheap test first, as most names do not start with `x-`. */
function kindOf(name: string): number {
  if (name.charCodeAt(0) !== 120 || name.charCodeAt(1) !== 45) return 0;
  return HEADER_KINDS.get(name) ?? 0;
}

/** Removes, in place, every header whose kind is in `mask`. */
function removeKinds(h: string[], mask: number): void {
  let w = 0;
  for (let r = 0; r < h.length; r += 2) {
    const name = h[r] as string;
    if ((kindOf(name) & mask) !== 0) continue;
    if (w !== r) {
      h[w] = name;
      h[w + 1] = h[r + 1] as string;
    }
    w += 2;
  }
  h.length = w;
}

/**
 * The reference's `mutateRequestHeaders`, in place on `req.headers`, before the request is
 * routed (route matchers, filters, the access log and the upstream all see the result):
 *
 * - the client: with `use_remote_address`, the peer (or, with `xff_num_trusted_hops` N > 0,
 *   the Nth address from the right of `x-forwarded-for`); without, `x-forwarded-for`'s address
 *   N+1 from the right;
 * - internal when that address is internal and `x-forwarded-for` (after the append) holds
 *   just it: `x-proxy-internal: true`; otherwise the control headers are removed, and on an
 *   edge the caller-describing ones too, with `x-proxy-external-address` set to the client;
 * - `x-forwarded-client-cert` is removed (SANITIZE) unless ALWAYS_FORWARD_ONLY;
 * - `x-forwarded-for` gets the peer appended on an edge, `x-forwarded-proto` is set, and
 *   `x-request-id` generated when absent, or replaced on an edge.
 *
 * The route table's `internal_only_headers` are removed from a request that is not internal;
 * `info.downstreamRemote` becomes the client when `x-forwarded-for` named it.
 * Returns `EDGE_*` bits. `localAddress` stands in for a loopback peer in `x-forwarded-for`.
 */
export function applyEdge(
  req: HttpRequest,
  spec: EdgeSpec,
  localAddress: string,
  internalOnly: readonly string[] = NONE,
  info: Pick<StreamInfo, 'downstreamRemote'> | null = null,
): number {
  const h = req.headers;
  let seen = 0;
  let xff: string | null = null;
  for (let i = 0; i < h.length; i += 2) {
    const kind = kindOf(h[i] as string);
    if (kind === 0) continue;
    seen |= kind;
    if (kind === K_XFF) xff = xff === null ? (h[i + 1] as string) : `${xff}, ${h[i + 1]}`;
  }
  const peer = req.remoteIp;
  const hops = spec.xffNumTrustedHops;
  let client: XffAddress;
  let fromPeer: XffAddress | null = null;
  let appended: string | null = null;
  if (spec.useRemoteAddress) {
    const trusted = hops > 0 ? addressFromXff(xff, hops - 1).address : null;
    client = { address: trusted ?? peer, single: xff === null };
    if (trusted === null) fromPeer = client;
    if (!spec.skipXffAppend && peer !== '') appended = isLoopbackAddress(peer) ? localAddress : peer;
  } else {
    client = addressFromXff(xff, hops);
  }
  // The access log's client: an address read from x-forwarded-for, with port 0 as the reference's.
  if (info !== null && client.address !== null && client !== fromPeer)
    info.downstreamRemote = joinHostPort(client.address, 0);
  const internal =
    client.single && client.address !== null && isInternalAddress(client.address, spec.unixSocketsInternal);
  const edge = !internal && spec.useRemoteAddress;
  let remove = spec.forwardClientCert ? K_INTERNAL : K_INTERNAL | K_XFCC;
  if (!internal) remove |= K_CONTROL;
  if (edge) remove |= K_EDGE;
  if (appended !== null) remove |= K_XFF;
  const setProto = !(seen & K_XFP) || (spec.useRemoteAddress && hops === 0);
  if (setProto) remove |= K_XFP;
  const newId =
    spec.generateRequestId && (!(seen & K_REQUEST_ID) || (edge && !spec.preserveExternalRequestId));
  if (newId) remove |= K_REQUEST_ID;
  if ((seen & remove) !== 0) removeKinds(h, remove);
  if (!internal) for (const name of internalOnly) removeHeader(h, name);
  if (appended !== null) h.push('x-forwarded-for', xff === null ? appended : `${xff}, ${appended}`);
  // The connection's own scheme, as the reference's `connection.ssl()`: an HTTP/2 client's
  // `:scheme` is its word alone, and `https` on a plain connection told the upstream TLS was used.
  if (setProto) h.push('x-forwarded-proto', req.peer ? 'https' : 'http');
  if (internal) h.push(INTERNAL_HEADER, 'true');
  if (edge && client.address) h.push(EXTERNAL_ADDRESS_HEADER, client.address);
  if (newId) h.push('x-request-id', requestId());
  if (spec.via) appendVia(h, spec.via);
  return (
    (internal ? EDGE_INTERNAL : 0) |
    (edge ? EDGE_EXTERNAL : 0) |
    (internal && seen & K_ROUTER ? EDGE_ROUTER_HEADERS : 0)
  );
}

/** `via`: appended to the header's last value (`, ` between), as the reference appends it. */
export function appendVia(h: string[], via: string): void {
  for (let i = h.length - 2; i >= 0; i -= 2)
    if (h[i] === 'via') {
      h[i + 1] = h[i + 1] ? `${h[i + 1]}, ${via}` : via;
      return;
    }
  h.push('via', via);
}
