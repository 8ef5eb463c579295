/**
 * What ext_authz asks and how it reads the answer, for both services: the gRPC
 * `CheckRequest` and `CheckResponse` (v2 and v3 share field numbers), and the HTTP service's
 * request head and answer. Pure functions of the request and the answer; the filter
 * (index.ts) sends and acts.
 */
import { headToText, textToHead } from '../../../codec/head-text.js';
import { HOP_BY_HOP } from '../../../codec/hop-by-hop.js';
import type { HttpRequest } from '../../../codec/request.js';
import type { CallResult } from '../cluster-call.js';
import type { GrpcCallResult, GrpcCallSpec } from '../grpc-call.js';
import { type GrpcAuthorizer, type HttpAuthorizer, statusCodeNumber } from './config.js';

/** The authorizer's verdict, as the filter acts on it. */
export type Verdict =
  | {
      kind: 'ok';
      /** Headers to set on the request (replacing), flat. */
      set: string[];
      /** Headers to append to the request, flat. */
      append: string[];
      remove: string[];
    }
  | { kind: 'denied'; status: number; headers: string[]; body: string }
  | { kind: 'error'; why: string };

/** `ip:port` as a `core.Address`. */
function address(ipPort: string | undefined, port?: number): Record<string, unknown> {
  if (ipPort === undefined) return {};
  const colon = ipPort.lastIndexOf(':');
  const ip = port === undefined && colon > 0 ? ipPort.slice(0, colon) : ipPort;
  const p = port ?? (colon > 0 ? Number(ipPort.slice(colon + 1)) : 0);
  return { socket_address: { address: ip.replace(/^\[|\]$/g, ''), port_value: Number.isInteger(p) ? p : 0 } };
}

/**
 * The request's headers as the `headers` map: pseudo-headers included, repeats joined by `,`;
 * values as text (a protobuf string), the UTF-8 the client sent.
 */
function headerMap(req: HttpRequest): Record<string, string> {
  const out: Record<string, string> = {
    ':authority': headToText(req.authority),
    ':method': req.method,
    ':path': headToText(req.path),
  };
  const h = req.headers;
  for (let i = 0; i < h.length; i += 2) {
    const name = h[i] as string;
    const value = headToText(h[i + 1] as string);
    out[name] = Object.hasOwn(out, name) ? `${out[name]},${value}` : value;
  }
  return out;
}

/** The request body sent with a check (`with_request_body`): what was buffered, and whether it is all of it. */
export interface CheckBody {
  data: Buffer;
  partial: boolean;
}

/** The header telling the authorizer whether the body it got is partial (the reference's name). */
const PARTIAL_BODY_HEADER = 'x-envoy-auth-partial-body';

/** The `CheckRequest` for a request (`AttributeContext`, fields as the schema spells them). */
export function checkRequest(
  req: HttpRequest,
  contextExtensions: Record<string, string>,
  body: CheckBody | null,
  packAsBytes: boolean,
): Record<string, unknown> {
  const headers = headerMap(req);
  if (body !== null) headers[PARTIAL_BODY_HEADER] = String(body.partial);
  const now = Date.now();
  const path = headers[':path'] as string;
  const query = path.indexOf('?');
  const id = req.headers.indexOf('x-request-id');
  return {
    attributes: {
      source: { address: address(req.remoteIp, req.remotePort ?? 0) },
      destination: { address: address(req.localAddress) },
      request: {
        time: { seconds: Math.floor(now / 1000), nanos: (now % 1000) * 1e6 },
        http: {
          id: id >= 0 && id % 2 === 0 ? headToText(req.headers[id + 1] as string) : '',
          method: req.method,
          headers,
          path,
          host: headers[':authority'],
          scheme: req.scheme,
          query: query >= 0 ? path.slice(query + 1) : '',
          size: body !== null ? body.data.length : req.contentLength >= 0 ? req.contentLength : -1,
          protocol: req.protocol,
          ...(body === null
            ? {}
            : packAsBytes
              ? { raw_body: body.data }
              : { body: body.data.toString('utf8') }),
        },
      },
      context_extensions: contextExtensions,
    },
  };
}

/** `HeaderValueOption`s, as the decoded message holds them, split by `append`. */
function headerOptions(options: unknown): { set: string[]; append: string[] } {
  const set: string[] = [];
  const append: string[] = [];
  for (const o of Array.isArray(options) ? options : []) {
    const header = (o as { header?: { key?: string; value?: string } }).header;
    const key = header?.key?.toLowerCase() ?? '';
    if (!validHeaderName(key) || !validHeaderValue(header?.value ?? '')) continue;
    const appended = (o as { append?: { value?: boolean } | null }).append?.value === true;
    // The message's text goes into the head as its UTF-8 bytes.
    (appended ? append : set).push(key, textToHead(header?.value ?? ''));
  }
  return { set, append };
}

/** A header name a request may carry: a token, no pseudo-header, nothing hop-by-hop. */
function validHeaderName(name: string): boolean {
  return /^[!#$%&'*+.^_`|~0-9a-z-]+$/.test(name) && !NOT_SETTABLE.has(name);
}

/** A value without CR, LF or NUL (an authorizer cannot split a header). */
function validHeaderValue(value: string): boolean {
  return !/[\r\n\0]/.test(value);
}

/** Headers an authorizer may not set: hop-by-hop ones, and the framing and Host the proxy owns. */
const NOT_SETTABLE = new Set([...HOP_BY_HOP, 'host', 'content-length']);

/**
 * The unary call that asks a gRPC authorizer, from the HTTP filter or the network one. v2 and
 * v3 `CheckRequest`s are the same on the wire; `path` names the version's service.
 */
export function checkCall(service: GrpcAuthorizer): GrpcCallSpec {
  return {
    cluster: service.cluster,
    path: service.path,
    requestType: 'envoy.service.auth.v2.CheckRequest',
    responseType: 'envoy.service.auth.v2.CheckResponse',
    timeoutMs: service.timeoutMs,
    metadata: service.metadata,
  };
}

/** gRPC status OK. */
const GRPC_OK = 0;

/** The verdict of a gRPC `CheckResponse`: `status.code` 0 allows; any other code denies. */
export function grpcVerdict(result: GrpcCallResult): Verdict {
  if (!result.ok) return { kind: 'error', why: result.why };
  const m = result.message;
  const code = Number((m.status as { code?: number } | null)?.code ?? 0);
  if (code === GRPC_OK) {
    const ok = (m.ok_response ?? {}) as { headers?: unknown; headers_to_remove?: unknown };
    const { set, append } = headerOptions(ok.headers);
    const remove = (Array.isArray(ok.headers_to_remove) ? ok.headers_to_remove : [])
      .map((n) => String(n).toLowerCase())
      .filter(validHeaderName);
    return { kind: 'ok', set, append, remove };
  }
  const denied = (m.denied_response ?? {}) as {
    status?: { code?: unknown };
    headers?: unknown;
    body?: string;
  };
  const { set, append } = headerOptions(denied.headers);
  return {
    kind: 'denied',
    status: deniedStatus(denied.status?.code),
    headers: [...set, ...append],
    body: typeof denied.body === 'string' ? denied.body : '',
  };
}

/** The reference's StatusCode enum name or number as an HTTP status; 403 when none or not one. */
function deniedStatus(code: unknown): number {
  const n = statusCodeNumber(code);
  return n >= 200 && n <= 599 ? n : 403;
}

/** Headers always sent to an HTTP authorizer, whatever `allowed_headers` says (as the reference). */
const ALWAYS_SENT = new Set(['authorization']);

/** The head of the HTTP authorization request for a client request. */
export function httpCheckHead(
  service: HttpAuthorizer,
  req: HttpRequest,
  body: CheckBody | null,
): { path: string; headers: string[] } {
  const headers: string[] = [];
  const h = req.headers;
  for (let i = 0; i < h.length; i += 2) {
    const name = h[i] as string;
    if (name === 'content-length') continue;
    if (ALWAYS_SENT.has(name) || service.allowedHeaders?.some((t) => t(name)) === true)
      headers.push(name, h[i + 1] as string);
  }
  for (let i = 0; i < service.headersToAdd.length; i += 2) {
    const name = service.headersToAdd[i] as string;
    for (let j = headers.length - 2; j >= 0; j -= 2) if (headers[j] === name) headers.splice(j, 2);
    headers.push(name, service.headersToAdd[i + 1] as string);
  }
  if (body !== null) headers.push(PARTIAL_BODY_HEADER, String(body.partial));
  return { path: service.pathPrefix + req.path, headers };
}

/** Answer headers a denial never passes on: the local reply writes its own. */
const NOT_PASSED = new Set([...NOT_SETTABLE, 'content-type', 'date', 'server']);

/** Answer headers matching `tests`, flat (none for null). */
function picked(headers: string[], tests: HttpAuthorizer['upstreamHeaders']): string[] {
  if (tests === null) return [];
  const out: string[] = [];
  for (let i = 0; i < headers.length; i += 2) {
    const name = headers[i] as string;
    if (tests.some((t) => t(name)) && validHeaderName(name)) out.push(name, headers[i + 1] as string);
  }
  return out;
}

/**
 * The verdict of an HTTP authorizer's answer: 200 allows (its allowed upstream headers go to
 * the request), 5xx or no answer is an error, anything else denies with that status.
 */
export function httpVerdict(service: HttpAuthorizer, result: CallResult): Verdict {
  if (!result.ok) return { kind: 'error', why: result.reason };
  if (result.status >= 500 || result.status < 200)
    return { kind: 'error', why: `HTTP status ${result.status}` };
  if (result.status === 200)
    return {
      kind: 'ok',
      set: picked(result.headers, service.upstreamHeaders),
      append: picked(result.headers, service.upstreamHeadersToAppend),
      remove: [],
    };
  const clientHeaders: string[] = [];
  const h = result.headers;
  for (let i = 0; i < h.length; i += 2) {
    const name = h[i] as string;
    if (NOT_PASSED.has(name) || !validHeaderName(name)) continue;
    if (
      service.clientHeaders === null ||
      service.clientHeaders.some((t) => t(name)) ||
      DENIAL_HEADERS.has(name)
    )
      clientHeaders.push(name, h[i + 1] as string);
  }
  return {
    kind: 'denied',
    status: result.status,
    headers: clientHeaders,
    body: result.body.toString('utf8'),
  };
}

/** Headers a denial passes whenever `allowed_client_headers` is set (as the reference). */
const DENIAL_HEADERS = new Set(['www-authenticate', 'location']);
