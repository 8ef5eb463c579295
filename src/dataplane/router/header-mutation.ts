import { hostname } from 'node:os';
import type { Json, JsonObject } from '../../../events/config.js';
import { listOf, objectOf } from '../../../reducers/settings/values.js';
import { acting, checkFields, type FieldTable } from '../../bootstrap/honoured.js';
import { fault, type Report } from '../../bootstrap/report.js';
import type { UpstreamHost } from '../../upstream/types.js';
import { compileStrftime, portOf, withoutPort } from '../access-log/format.js';
import { flagsText, type StreamInfo } from '../access-log/stream-info.js';
import { textToHead } from '../codec/head-text.js';
import { headerValue } from '../codec/request.js';

/** What a header value's variables read: the stream's record and the upstream host chosen, if any. */
export interface HeaderContext {
  info: StreamInfo;
  host: UpstreamHost | null;
}

/** A header value compiled once: literal text and variables; '' means "do not add". */
export type HeaderTemplate = (ctx: HeaderContext) => string;

export interface HeaderAdd {
  name: string;
  value: HeaderTemplate;
  /** `append` (default true): add beside existing values; false replaces them. */
  append: boolean;
}

/** The `*_headers_to_add` / `*_headers_to_remove` of one level (route, virtual host, route table, weighted cluster). */
export interface HeaderMutation {
  requestAdd: HeaderAdd[];
  requestRemove: string[];
  responseAdd: HeaderAdd[];
  responseRemove: string[];
}

/** The fields of a level that this file compiles; each table that holds them spreads these in. */
export const HEADER_MUTATION_FIELDS = [
  'request_headers_to_add',
  'request_headers_to_remove',
  'response_headers_to_add',
  'response_headers_to_remove',
] as const;

const HEADER_VALUE_OPTION_FIELDS: FieldTable = acting('header', 'append', 'append_action');
const HEADER_VALUE_FIELDS: FieldTable = acting('key', 'value');

/** The field tables of this compile step, by the message name its findings use. */
export const FIELD_TABLES = {
  HeaderValueOption: HEADER_VALUE_OPTION_FIELDS,
  HeaderValue: HEADER_VALUE_FIELDS,
};

/** Read once: `%HOSTNAME%` would otherwise cost a system call per request. */
const HOSTNAME = hostname();

/** Variables without an argument, as the reference's header formatter names them. */
const SIMPLE: Record<string, HeaderTemplate> = {
  DOWNSTREAM_REMOTE_ADDRESS: ({ info }) => info.downstreamRemote,
  DOWNSTREAM_REMOTE_ADDRESS_WITHOUT_PORT: ({ info }) => withoutPort(info.downstreamRemote),
  // No PROXY protocol or trusted x-forwarded-for: the direct peer is the peer.
  DOWNSTREAM_DIRECT_REMOTE_ADDRESS: ({ info }) => info.downstreamDirectRemote,
  DOWNSTREAM_DIRECT_REMOTE_ADDRESS_WITHOUT_PORT: ({ info }) => withoutPort(info.downstreamDirectRemote),
  DOWNSTREAM_LOCAL_ADDRESS: ({ info }) => info.downstreamLocal,
  DOWNSTREAM_LOCAL_ADDRESS_WITHOUT_PORT: ({ info }) => withoutPort(info.downstreamLocal),
  DOWNSTREAM_LOCAL_PORT: ({ info }) => portOf(info.downstreamLocal),
  PROTOCOL: ({ info }) => info.request?.protocol ?? info.codecProtocol ?? '',
  RESPONSE_FLAGS: ({ info }) => (info.flags === 0 ? '' : flagsText(info.flags)),
  // 0 before a response exists (request headers), as the reference prints it.
  RESPONSE_CODE: ({ info }) => String(info.responseCode),
  // Set with the response (`via_upstream`, `direct_response`, ...): empty in request headers.
  RESPONSE_CODE_DETAILS: ({ info }) => info.details,
  UPSTREAM_REMOTE_ADDRESS: ({ host }) => host?.address ?? '',
  // Known once a connection carries the request: empty in request headers, which are made before.
  UPSTREAM_LOCAL_ADDRESS: ({ info }) => info.upstreamLocal,
  HOSTNAME: () => HOSTNAME,
};

/** The reference's TLS variables: this build keeps no downstream certificate facts for the router. */
const TLS_VARIABLES = new Set([
  'DOWNSTREAM_LOCAL_URI_SAN',
  'DOWNSTREAM_PEER_URI_SAN',
  'DOWNSTREAM_LOCAL_SUBJECT',
  'DOWNSTREAM_PEER_SUBJECT',
  'DOWNSTREAM_PEER_ISSUER',
  'DOWNSTREAM_TLS_SESSION_ID',
  'DOWNSTREAM_TLS_CIPHER',
  'DOWNSTREAM_TLS_VERSION',
  'DOWNSTREAM_PEER_FINGERPRINT_256',
  'DOWNSTREAM_PEER_SERIAL',
  'DOWNSTREAM_PEER_CERT',
  'DOWNSTREAM_PEER_CERT_V_START',
  'DOWNSTREAM_PEER_CERT_V_END',
]);

/** A metadata leaf as a header value: strings as they are, numbers and bools printed, the rest empty. */
function leafText(value: Json | undefined): string {
  if (typeof value === 'string') return value;
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  return '';
}

/** `["namespace", "key", "nested key" ...]`, the argument of `%UPSTREAM_METADATA(...)%`. */
function metadataPath(arg: string, where: string): string[] {
  let parsed: unknown;
  try {
    parsed = JSON.parse(arg);
  } catch {
    parsed = null;
  }
  if (!Array.isArray(parsed) || parsed.length < 2 || !parsed.every((p) => typeof p === 'string' && p))
    throw fault(
      where,
      `%UPSTREAM_METADATA(${arg})%: the argument is a JSON list of a namespace and keys, as ["proxy.lb", "version"]`,
    );
  return parsed as string[];
}

function variable(name: string, arg: string | undefined, where: string): HeaderTemplate {
  if (name === 'UPSTREAM_METADATA') {
    if (arg === undefined) throw fault(where, '%UPSTREAM_METADATA%: needs (["namespace", "key"])');
    const [namespace, ...keys] = metadataPath(arg, where);
    return ({ host }) => {
      let node: Json | undefined = host?.state.metadata[namespace as string];
      // A raw read by design: the member's metadata is data it carries (any shape the control
      // plane chose), walked per request along the compiled path, not a config field to compile.
      for (const k of keys) node = objectOf(node)[k];
      return leafText(node);
    };
  }
  // What the HTTP filters recorded before the router (src/dataplane/access-log/stream-info.ts).
  if (name === 'DYNAMIC_METADATA') {
    if (arg === undefined) throw fault(where, '%DYNAMIC_METADATA%: needs (["namespace", "key"])');
    const [namespace, ...keys] = metadataPath(arg, where);
    return ({ info }) => {
      // Plain data filters set per request, not config: walked without the config readers.
      let node: Json | undefined = info.dynamicMetadata?.[namespace as string];
      for (const k of keys)
        node = node !== null && typeof node === 'object' && !Array.isArray(node) ? node[k] : undefined;
      return leafText(node);
    };
  }
  if (name === 'PER_REQUEST_STATE') {
    const key = (arg ?? '').trim();
    if (!key)
      throw fault(where, '%PER_REQUEST_STATE%: needs a filter state name, as %PER_REQUEST_STATE(my.key)%');
    return ({ info }) => leafText(info.filterState?.get(key)?.value);
  }
  if (name === 'REQ') {
    const header = (arg ?? '').trim().toLowerCase();
    if (!header) throw fault(where, '%REQ%: needs a header name, as %REQ(x-header)%');
    return ({ info }) => (info.request ? (headerValue(info.request, header) ?? '') : '');
  }
  if (name === 'START_TIME') {
    const render = compileStrftime(arg || '%Y-%m-%dT%H:%M:%E3SZ');
    return ({ info }) => render(info.startTime);
  }
  if (TLS_VARIABLES.has(name))
    throw fault(
      where,
      `%${name}% is not supported by this build (no downstream TLS facts reach the router)`,
      'unsupported',
    );
  const simple = Object.hasOwn(SIMPLE, name) ? SIMPLE[name] : undefined;
  if (!simple) throw fault(where, `%${name}% is not a header variable this build knows`);
  if (arg !== undefined) throw fault(where, `%${name}% takes no argument`);
  return simple;
}

/**
 * Compiles a header value once: `%%` is a literal `%`, `%NAME%` and `%NAME(ARG)%` are
 * variables (an argument runs to the first `)%`). Throws a fault naming what is wrong.
 */
export function compileHeaderTemplate(format: string, where: string): HeaderTemplate {
  const parts: Array<string | HeaderTemplate> = [];
  let literal = '';
  let i = 0;
  while (i < format.length) {
    const ch = format[i] as string;
    if (ch !== '%') {
      literal += ch;
      i++;
      continue;
    }
    if (format[i + 1] === '%') {
      literal += '%';
      i += 2;
      continue;
    }
    const m = /^%([A-Z][A-Z0-9_]*)(\()?/.exec(format.slice(i));
    if (!m) throw fault(where, `'${format}': a % starts a variable (%NAME% or %NAME(ARG)%) or is written %%`);
    let arg: string | undefined;
    let next: number;
    if (m[2]) {
      const close = format.indexOf(')%', i + m[0].length);
      if (close < 0) throw fault(where, `'${format}': %${m[1]}(... has no closing )%`);
      arg = format.slice(i + m[0].length, close);
      next = close + 2;
    } else {
      if (format[i + m[0].length] !== '%') throw fault(where, `'${format}': %${m[1]} has no closing %`);
      next = i + m[0].length + 1;
    }
    if (literal) parts.push(literal);
    literal = '';
    parts.push(variable(m[1] as string, arg, where));
    i = next;
  }
  if (literal) parts.push(literal);
  if (parts.length === 0) return () => '';
  if (parts.length === 1) {
    const only = parts[0] as string | HeaderTemplate;
    return typeof only === 'string' ? () => only : only;
  }
  return (ctx) => {
    let out = '';
    for (const p of parts) out += typeof p === 'string' ? p : p(ctx);
    return out;
  };
}

/** A field name (RFC 9110 5.1 token), as the reference's `HTTP_HEADER_NAME` rule checks it. */
const HEADER_NAME = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
/** CR, LF or NUL: a value holding one would split or end the head it is written into. */
export const UNSAFE_VALUE = /[\r\n\0]/;

/** Pseudo-headers and `host` are the codec's and the router's; configs may not change them. */
function checkName(name: string, where: string): string {
  const lower = name.toLowerCase();
  if (!lower) throw fault(where, 'a header name is required', 'missing');
  if (lower.startsWith(':') || lower === 'host')
    throw fault(where, `'${name}' cannot be added or removed (pseudo-headers and host belong to the router)`);
  if (!HEADER_NAME.test(lower))
    throw fault(where, `${JSON.stringify(name)} is not a header name (RFC 9110 5.1 token)`);
  return lower;
}

/**
 * A header value from config: CR, LF or NUL refused (written into an HTTP/1 head they would
 * inject fields or a whole response), as the reference's `HTTP_HEADER_VALUE` rule does; the
 * rest as its UTF-8 bytes.
 */
export function checkHeaderValue(value: string, where: string): string {
  if (UNSAFE_VALUE.test(value))
    throw fault(where, `${JSON.stringify(value)} holds CR, LF or NUL, which a header value cannot`);
  return textToHead(value);
}

/**
 * A string the router writes into a request line or a header (`Location`, Host, a rewritten
 * path): null when unset; CR, LF or NUL refused, as the reference's validation does.
 */
export function headerText(value: unknown, where: string): string | null {
  return typeof value === 'string' ? checkHeaderValue(value, where) : null;
}

/**
 * A string field written into a head (`via`, `server_name`, a health check's path and host,
 * CORS values), as its UTF-8 bytes: '' when unset; CR, LF or NUL is an error at `path`.
 */
export function headerValueField(value: unknown, path: string, report: Report): string {
  if (typeof value !== 'string') return '';
  if (!UNSAFE_VALUE.test(value)) return textToHead(value);
  report.error(path, `${JSON.stringify(value)} holds CR, LF or NUL, which a header value cannot`);
  return '';
}

/**
 * A value rendered per request from variables (metadata a management server sent, a client's
 * header): one holding CR, LF or NUL renders empty, so it is not added.
 */
function safeTemplate(format: string, template: HeaderTemplate): HeaderTemplate {
  if (!format.includes('%')) return template;
  return (ctx) => {
    const value = template(ctx);
    return UNSAFE_VALUE.test(value) ? '' : value;
  };
}

/** A `HeaderValueOption` list (`where` names it); throws a fault for a bad value or name. */
export function compileHeaderAdds(raw: Json | undefined, where: string, report: Report): HeaderAdd[] {
  return listOf(raw).map((option, i) => {
    const at = `${where}[${i}]`;
    checkFields(option, at, report, HEADER_VALUE_OPTION_FIELDS, 'HeaderValueOption');
    const header = objectOf(option.header);
    checkFields(header, `${at}.header`, report, HEADER_VALUE_FIELDS, 'HeaderValue');
    const name = checkName(typeof header.key === 'string' ? header.key : '', `${at}.header.key`);
    const format = checkHeaderValue(
      typeof header.value === 'string' ? header.value : '',
      `${at}.header.value`,
    );
    const value = safeTemplate(format, compileHeaderTemplate(format, `${at}.header.value`));
    return { name, value, append: appends(option, at, report) };
  });
}

/**
 * Whether a header is added beside existing values: v2's `append` (default true), or v3's
 * `append_action` (APPEND_IF_EXISTS_OR_ADD, or OVERWRITE_IF_EXISTS_OR_ADD to replace them);
 * the reference refuses both at once.
 */
export function appends(option: JsonObject, at: string, report: Report): boolean {
  const action = option.append_action;
  if (action === undefined) return option.append !== false;
  if (option.append !== undefined) report.error(at, 'only one of append and append_action may be set');
  if (action === 'OVERWRITE_IF_EXISTS_OR_ADD') return false;
  if (action !== 'APPEND_IF_EXISTS_OR_ADD')
    report.unsupported(`${at}.append_action`, `append_action ${String(action)} is not implemented`);
  return true;
}

function compileRemoves(raw: Json | undefined, where: string): string[] {
  return (Array.isArray(raw) ? raw : []).map((n, i) => checkName(String(n), `${where}[${i}]`));
}

/**
 * The header mutations of one level (`raw` holds the four fields), or null when it has none
 * so the request path skips it. Throws a fault for a bad value or name.
 */
export function compileHeaderMutation(raw: JsonObject, where: string, report: Report): HeaderMutation | null {
  if (HEADER_MUTATION_FIELDS.every((f) => raw[f] === undefined)) return null;
  return {
    requestAdd: compileHeaderAdds(raw.request_headers_to_add, `${where}.request_headers_to_add`, report),
    requestRemove: compileRemoves(raw.request_headers_to_remove, `${where}.request_headers_to_remove`),
    responseAdd: compileHeaderAdds(raw.response_headers_to_add, `${where}.response_headers_to_add`, report),
    responseRemove: compileRemoves(raw.response_headers_to_remove, `${where}.response_headers_to_remove`),
  };
}

function removeAll(headers: string[], name: string): void {
  for (let i = headers.length - 2; i >= 0; i -= 2) if (headers[i] === name) headers.splice(i, 2);
}

/**
 * Applies the levels in order (most specific first, as the reference does: weighted cluster,
 * route, virtual host, route table), each removing then adding, to a flat header list in
 * place. A value that renders empty is not added.
 */
export function applyHeaderMutations(
  headers: string[],
  levels: ReadonlyArray<HeaderMutation | null>,
  response: boolean,
  ctx: HeaderContext,
): void {
  for (const level of levels) {
    if (!level) continue;
    for (const name of response ? level.responseRemove : level.requestRemove) removeAll(headers, name);
    for (const add of response ? level.responseAdd : level.requestAdd) {
      const value = add.value(ctx);
      if (value === '') continue;
      if (!add.append) removeAll(headers, add.name);
      headers.push(add.name, value);
    }
  }
}
