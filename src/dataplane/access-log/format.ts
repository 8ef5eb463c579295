import { hostname } from 'node:os';
import type { Json } from '../../../events/config.js';
import { headToText } from '../codec/head-text.js';
import { headerValue } from '../codec/request.js';
import { flagsText, type StreamInfo } from './stream-info.js';

/**
 * What one command yields: a string, a number, null when unset (printed `-`), or (dynamic
 * metadata, filter state) any JSON value, printed as JSON in text and kept whole in typed JSON.
 */
type Value = Json;
type Getter = (info: StreamInfo) => Value;

/** One access log line (or JSON object) rendered from a stream's record. */
export type Formatter = (info: StreamInfo) => string;

/** The reference's format when a file access log sets none (its header names say proxy). */
export const DEFAULT_FORMAT =
  '[%START_TIME%] "%REQ(:METHOD)% %REQ(X-PROXY-ORIGINAL-PATH?:PATH)% %PROTOCOL%" ' +
  '%RESPONSE_CODE% %RESPONSE_FLAGS% %BYTES_RECEIVED% %BYTES_SENT% %DURATION% ' +
  '%RESP(X-PROXY-UPSTREAM-SERVICE-TIME)% "%REQ(X-FORWARDED-FOR)%" "%REQ(USER-AGENT)%" ' +
  '"%REQ(X-REQUEST-ID)%" "%REQ(:AUTHORITY)%" "%UPSTREAM_HOST%"\n';

const ms = (from: number, to: number): Value => (from > 0 && to > 0 ? Math.floor(to - from) : null);
const orNull = (s: string): Value => (s === '' ? null : s);

/** The host of a stream's `ip:port` (an IPv6 one unbracketed); '' for ''. Header formats use it too. */
export function withoutPort(address: string): string {
  const colon = address.lastIndexOf(':');
  const host = colon < 0 ? address : address.slice(0, colon);
  return host.startsWith('[') ? host.slice(1, -1) : host;
}

/** The port of a stream's `ip:port` as written; '' when it has none. Header formats use it too. */
export function portOf(address: string): string {
  const colon = address.lastIndexOf(':');
  return colon < 0 ? '' : address.slice(colon + 1);
}

const hostOrNull = (address: string): Value => (address ? withoutPort(address) : null);
const portOrNull = (address: string): Value => {
  const port = portOf(address);
  return port === '' ? null : Number(port);
};

/** Read once: `%HOSTNAME%` would otherwise cost a system call per request. */
const HOSTNAME = hostname();

/** Commands without arguments. */
const SIMPLE: Record<string, Getter> = {
  BYTES_RECEIVED: (i) => i.bytesReceived,
  BYTES_SENT: (i) => i.bytesSent,
  PROTOCOL: (i) => i.request?.protocol ?? i.codecProtocol,
  RESPONSE_CODE: (i) => i.responseCode,
  RESPONSE_FLAGS: (i) => flagsText(i.flags),
  RESPONSE_CODE_DETAILS: (i) => orNull(i.details),
  LOCAL_REPLY_BODY: (i) => i.localReplyBody,
  DURATION: (i) => ms(i.startedAt, i.endedAt),
  RESPONSE_DURATION: (i) => ms(i.startedAt, i.firstUpstreamByteAt),
  RESPONSE_TX_DURATION: (i) => ms(i.firstUpstreamByteAt, i.endedAt),
  UPSTREAM_HOST: (i) => orNull(i.upstreamHost),
  UPSTREAM_LOCAL_ADDRESS: (i) => orNull(i.upstreamLocal),
  UPSTREAM_CLUSTER: (i) => orNull(i.upstreamCluster),
  DOWNSTREAM_REMOTE_ADDRESS: (i) => orNull(i.downstreamRemote),
  DOWNSTREAM_REMOTE_ADDRESS_WITHOUT_PORT: (i) => hostOrNull(i.downstreamRemote),
  // No PROXY protocol or x-forwarded-for trust here: the direct peer is the peer.
  DOWNSTREAM_DIRECT_REMOTE_ADDRESS: (i) => orNull(i.downstreamDirectRemote),
  DOWNSTREAM_DIRECT_REMOTE_ADDRESS_WITHOUT_PORT: (i) => hostOrNull(i.downstreamDirectRemote),
  DOWNSTREAM_LOCAL_ADDRESS: (i) => orNull(i.downstreamLocal),
  DOWNSTREAM_LOCAL_ADDRESS_WITHOUT_PORT: (i) => hostOrNull(i.downstreamLocal),
  DOWNSTREAM_LOCAL_PORT: (i) => portOrNull(i.downstreamLocal),
  ROUTE_NAME: (i) => orNull(i.routeName),
  HOSTNAME: () => HOSTNAME,
  // Without TLS there is never a server name, peer certificate or transport failure to name.
  REQUESTED_SERVER_NAME: () => null,
  UPSTREAM_TRANSPORT_FAILURE_REASON: () => null,
  // The reference sets it only where an L4 filter closes the connection with a reason
  // (network RBAC's denial); no filter of this build records one, so it is never set.
  CONNECTION_TERMINATION_DETAILS: () => null,
};

/** Commands taking `(HEADER?ALTERNATIVE)`. */
const HEADER_COMMANDS = new Set(['REQ', 'RESP', 'TRAILER', 'REQ_WITHOUT_QUERY']);

function responseHeader(info: StreamInfo, name: string): string | undefined {
  const h = info.responseHeaders;
  if (!h) return undefined;
  let out: string | undefined;
  for (let i = 0; i < h.length; i += 2)
    if (h[i] === name) out = out === undefined ? h[i + 1] : `${out},${h[i + 1]}`;
  return out;
}

function headerGetter(command: string, arg: string): Getter {
  const [main = '', alternative, extra] = arg.toLowerCase().split('?');
  if (!main || extra !== undefined || alternative === '')
    throw new Error(`%${command}(${arg})%: expected (HEADER) or (HEADER?ALTERNATIVE)`);
  if (command === 'TRAILER') return () => null; // No trailers are forwarded by this build.
  const one =
    command === 'RESP'
      ? (info: StreamInfo, name: string) => responseHeader(info, name)
      : (info: StreamInfo, name: string) => (info.request ? headerValue(info.request, name) : undefined);
  // A format pasted from the reference names its headers `x-envoy-`; this proxy sets `x-proxy-`.
  const names = [main, alternative]
    .filter((n) => n !== undefined)
    .flatMap((n) => (n.startsWith('x-envoy-') ? [n, `x-proxy-${n.slice(8)}`] : [n]));
  const lookup = (info: StreamInfo) => {
    for (const name of names) {
      const v = one(info, name);
      if (v !== undefined) return headToText(v);
    }
    return undefined;
  };
  if (command === 'REQ_WITHOUT_QUERY')
    return (info) => {
      const v = lookup(info);
      if (v === undefined) return null;
      const q = v.indexOf('?');
      return q < 0 ? v : v.slice(0, q);
    };
  return (info) => lookup(info) ?? null;
}

const pad = (n: number, width = 2) => String(n).padStart(width, '0');
const DAYS = ['Sun', 'Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat'];
const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];
const fraction = (msEpoch: number, digits: number) =>
  pad(((msEpoch % 1000) + 1000) % 1000, 3)
    .padEnd(digits, '0')
    .slice(0, digits);

type TimePiece = (d: Date, msEpoch: number) => string;

/** strftime specifiers, in UTC as the reference prints access log times. */
const TIME_PIECES: Record<string, TimePiece> = {
  Y: (d) => String(d.getUTCFullYear()),
  y: (d) => pad(d.getUTCFullYear() % 100),
  C: (d) => pad(Math.floor(d.getUTCFullYear() / 100)),
  m: (d) => pad(d.getUTCMonth() + 1),
  d: (d) => pad(d.getUTCDate()),
  e: (d) => String(d.getUTCDate()).padStart(2, ' '),
  H: (d) => pad(d.getUTCHours()),
  I: (d) => pad(d.getUTCHours() % 12 || 12),
  M: (d) => pad(d.getUTCMinutes()),
  S: (d) => pad(d.getUTCSeconds()),
  p: (d) => (d.getUTCHours() < 12 ? 'AM' : 'PM'),
  j: (d) => pad(Math.floor((d.getTime() - Date.UTC(d.getUTCFullYear(), 0, 1)) / 86_400_000) + 1, 3),
  a: (d) => DAYS[d.getUTCDay()] as string,
  b: (d) => MONTHS[d.getUTCMonth()] as string,
  h: (d) => MONTHS[d.getUTCMonth()] as string,
  u: (d) => String(d.getUTCDay() || 7),
  w: (d) => String(d.getUTCDay()),
  z: () => '+0000',
  Z: () => 'UTC',
  s: (_d, t) => String(Math.floor(t / 1000)),
  T: (d) => `${pad(d.getUTCHours())}:${pad(d.getUTCMinutes())}:${pad(d.getUTCSeconds())}`,
  R: (d) => `${pad(d.getUTCHours())}:${pad(d.getUTCMinutes())}`,
  F: (d) => `${d.getUTCFullYear()}-${pad(d.getUTCMonth() + 1)}-${pad(d.getUTCDate())}`,
  D: (d) => `${pad(d.getUTCMonth() + 1)}/${pad(d.getUTCDate())}/${pad(d.getUTCFullYear() % 100)}`,
  n: () => '\n',
  t: () => '\t',
  '%': () => '%',
};

/**
 * Compiles a `%START_TIME(...)%` strftime format once. Beyond strftime: `%1f`..`%9f` (the
 * fraction of the second in that many digits) and `%E3S`-style seconds with a fraction
 * (`%E*S` gives milliseconds), as the reference accepts. Times have millisecond precision.
 */
export function compileStrftime(format: string): (msEpoch: number) => string {
  // Pieces that change within a second are rendered per call; the others once per second.
  const pieces: Array<{ render: TimePiece; subSecond: boolean } | string> = [];
  for (let i = 0; i < format.length; i++) {
    const ch = format[i] as string;
    const rest = format.slice(i + 1);
    const frac = /^([1-9])f/.exec(rest);
    const sec = /^E([1-9*])S/.exec(rest);
    if (ch !== '%') pieces.push(ch);
    else if (frac) {
      const digits = Number(frac[1]);
      pieces.push({ render: (_d, t) => fraction(t, digits), subSecond: true });
      i += 2;
    } else if (sec) {
      const digits = sec[1] === '*' ? 3 : Number(sec[1]);
      pieces.push({ render: (d, t) => `${pad(d.getUTCSeconds())}.${fraction(t, digits)}`, subSecond: true });
      i += 3;
    } else if (TIME_PIECES[rest[0] ?? ''] !== undefined) {
      pieces.push({ render: TIME_PIECES[rest[0] as string] as TimePiece, subSecond: false });
      i += 1;
    } else pieces.push(ch);
  }
  let second = Number.NaN;
  let cached: string[] = [];
  return (t) => {
    const s = Math.floor(t / 1000);
    const d = new Date(t);
    if (s !== second) {
      second = s;
      cached = pieces.map((p) => (typeof p === 'string' ? p : p.subSecond ? '' : p.render(d, t)));
    }
    let out = '';
    for (let i = 0; i < pieces.length; i++) {
      const p = pieces[i] as (typeof pieces)[number];
      out += typeof p !== 'string' && p.subSecond ? p.render(d, t) : (cached[i] as string);
    }
    return out;
  };
}

/** `2016-04-15T20:17:00.310Z`, the reference's default `%START_TIME%`. */
const defaultStartTime = compileStrftime('%Y-%m-%dT%H:%M:%E3SZ');

function command(name: string, arg: string | undefined, maxLength: number | undefined): Getter {
  let get: Getter | undefined;
  if (HEADER_COMMANDS.has(name)) {
    if (arg === undefined) throw new Error(`%${name}%: needs a header name, as %${name}(X-HEADER)%`);
    get = headerGetter(name, arg);
  } else if (name === 'DYNAMIC_METADATA') {
    get = metadataGetter(arg);
  } else if (name === 'FILTER_STATE') {
    get = filterStateGetter(arg);
  } else if (name === 'START_TIME') {
    const render = arg ? compileStrftime(arg) : defaultStartTime;
    get = (i) => render(i.startTime);
  } else {
    if (arg !== undefined) throw new Error(`%${name}% takes no argument`);
    get = Object.hasOwn(SIMPLE, name) ? SIMPLE[name] : undefined;
    if (!get) throw new Error(`%${name}% is not a command this build knows`);
  }
  if (maxLength === undefined) return get;
  const inner = get;
  return (i) => {
    const v = inner(i);
    if (typeof v === 'string') return v.slice(0, maxLength);
    return v !== null && typeof v === 'object' ? JSON.stringify(v).slice(0, maxLength) : v;
  };
}

/**
 * `%DYNAMIC_METADATA(NAMESPACE:KEY:...)%`: the namespace's object, or the value at the path of
 * keys into it; unset is `-`.
 */
function metadataGetter(arg: string | undefined): Getter {
  const [ns = '', ...keys] = (arg ?? '').split(':');
  if (ns === '' || keys.includes(''))
    throw new Error(`%DYNAMIC_METADATA(${arg ?? ''})%: expected (NAMESPACE) or (NAMESPACE:KEY:...)`);
  return (info) => {
    let v: Json | undefined = info.dynamicMetadata?.[ns];
    for (const key of keys) {
      if (v === null || typeof v !== 'object' || Array.isArray(v)) return null;
      v = v[key];
    }
    return v ?? null;
  };
}

/** `%FILTER_STATE(KEY)%`, `%FILTER_STATE(KEY:PLAIN)%` or `%FILTER_STATE(KEY:TYPED)%`: the object, unset `-`. */
function filterStateGetter(arg: string | undefined): Getter {
  const [key = '', form = 'TYPED', extra] = (arg ?? '').split(':');
  if (key === '' || extra !== undefined || (form !== 'PLAIN' && form !== 'TYPED'))
    throw new Error(`%FILTER_STATE(${arg ?? ''})%: expected (KEY), (KEY:PLAIN) or (KEY:TYPED)`);
  // PLAIN is the object's text: a string as itself, anything else as JSON.
  if (form === 'PLAIN')
    return (info) => {
      const v = info.filterState?.get(key)?.value;
      if (v === undefined || v === null) return null;
      return typeof v === 'string' ? v : JSON.stringify(v);
    };
  return (info) => info.filterState?.get(key)?.value ?? null;
}

const COMMAND = /^%([A-Z][A-Z0-9_]*)(?:\(([^)]*)\))?(?::(\d+))?%/;

/** A format string as literal text and commands; throws naming what is wrong. */
function parse(format: string): Array<string | Getter> {
  const out: Array<string | Getter> = [];
  let literal = '';
  for (let i = 0; i < format.length; i++) {
    const ch = format[i] as string;
    if (ch !== '%') {
      literal += ch;
      continue;
    }
    const m = COMMAND.exec(format.slice(i));
    if (!m)
      throw new Error(
        `no valid command at position ${i} of '${format}' (write %COMMAND%, %COMMAND(ARG)% or %COMMAND(ARG):LENGTH%)`,
      );
    if (literal) out.push(literal);
    literal = '';
    out.push(command(m[1] as string, m[2], m[3] === undefined ? undefined : Number(m[3])));
    i += m[0].length - 1;
  }
  if (literal) out.push(literal);
  return out;
}

const text = (v: Value): string => (v === null ? '-' : typeof v === 'object' ? JSON.stringify(v) : String(v));

/** Compiles a text format (`format`, or the default); throws on a bad command. */
export function compileTextFormat(format: string): Formatter {
  const parts = parse(format);
  return (info) => {
    let out = '';
    for (const p of parts) out += typeof p === 'string' ? p : text(p(info));
    return out;
  };
}

type JsonTemplate = (info: StreamInfo) => unknown;

function jsonTemplate(value: unknown, typed: boolean, where: string): JsonTemplate {
  if (typeof value === 'string') {
    const parts = parse(value);
    const only = parts[0];
    if (typed && parts.length === 1 && typeof only === 'function') return only;
    return (info) => {
      let out = '';
      for (const p of parts) out += typeof p === 'string' ? p : text(p(info));
      return out;
    };
  }
  if (value !== null && typeof value === 'object' && !Array.isArray(value)) {
    const fields = Object.entries(value).map(
      ([k, v]) => [k, jsonTemplate(v, typed, `${where}.${k}`)] as const,
    );
    return (info) => {
      const out: Record<string, unknown> = {};
      for (const [k, f] of fields) out[k] = f(info);
      return out;
    };
  }
  if (typeof value === 'number' || typeof value === 'boolean' || value === null) return () => value;
  throw new Error(`${where}: a JSON format value is a string, a number, a bool or an object`);
}

/**
 * Compiles `json_format` (every value a string, unset ones `-`) or `typed_json_format`
 * (a value that is one command keeps its type: numbers stay numbers, unset is null). Nested
 * objects are formatted field by field. One object per line.
 */
export function compileJsonFormat(struct: Record<string, unknown>, typed: boolean): Formatter {
  const template = jsonTemplate(struct, typed, typed ? 'typed_json_format' : 'json_format');
  return (info) => `${JSON.stringify(template(info))}\n`;
}
