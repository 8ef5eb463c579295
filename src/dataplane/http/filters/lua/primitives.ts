/**
 * The primitives the prelude's handles call (src/dataplane/http/filters/lua/prelude.ts), as
 * globals of each state: each takes the stream's id first and acts on that request.
 */
import { readFileSync } from 'node:fs';
import type { Json } from '../../../../../events/config.js';
import { setDynamicMetadata } from '../../../access-log/stream-info.js';
import { headerValue, removeHeader, setHeader, type TlsFacts } from '../../../codec/request.js';
import type { RouteHit } from '../api.js';
import { httpCallPrimitives } from './http-call.js';
import { registerUtilities } from './utilities.js';
import {
  type Define,
  type Flow,
  headerName,
  REQUEST,
  type StreamPrimitive,
  type ScriptState,
  type StreamState,
} from './flow.js';
import { LuaRaise, type LuaVm } from './vm.js';

const LOG_LEVELS = ['trace', 'trace', 'debug', 'info', 'warn', 'error', 'fatal'] as const;

/** The request (0) or response (1) flow a handle names. */
function flowOf(s: StreamState, dir: number): Flow {
  const flow = s.flows[dir];
  if (flow?.stream == null) throw new LuaRaise('object used outside of proper scope');
  return flow;
}

/** A body (0, 1) or the piece `bodyChunks()` handed last (2, 3). */
function bufferOf(s: StreamState, which: number): Buffer {
  const flow = flowOf(s, which % 2);
  return which < 2 ? flow.body() : flow.current;
}

/** The stream a primitive acts on (its first argument), or a Lua error when it is over. */
function streamOf(vm: LuaVm, script: ScriptState): StreamState {
  const stream = script.streams.get(vm.num(1));
  if (stream === undefined || stream.flows[REQUEST].stream === null)
    throw new LuaRaise('object used outside of proper scope');
  return stream;
}

/** Request headers (0), response headers (1), request trailers (2), response trailers (3). */
function headersOf(s: StreamState, which: number): string[] {
  if (which === 0) return s.stream.req.headers;
  if (which === 1 && s.responseHeaders !== null) return s.responseHeaders;
  const trailers = which >= 2 ? s.flows[which - 2]?.trailers : null;
  if (trailers != null) return trailers;
  throw new LuaRaise('object used outside of proper scope');
}

function pseudo(s: StreamState, which: number, name: string): string | undefined {
  if (which === 1) return name === ':status' ? String(s.responseStatus) : undefined;
  return which === 0 ? headerValue(s.stream.req, name) : undefined;
}

/** Sets a request pseudo header; the others cannot change here. */
function setPseudo(s: StreamState, which: number, name: string, value: string): void {
  const req = s.stream.req;
  if (which === 0 && name === ':path') req.path = value;
  else if (which === 0 && name === ':method') req.method = value;
  else if (which === 0 && (name === ':authority' || name === 'host')) req.authority = value.toLowerCase();
  else throw new LuaRaise(`${name} cannot be changed by a script in this build`);
}

/** Registers every primitive in `vm`, acting on `script`'s requests. */
export function registerPrimitives(vm: LuaVm, script: ScriptState): void {
  const p = (name: string, fn: StreamPrimitive) =>
    vm.register(`__proxy_${name}`, (v) => fn(v, streamOf(v, script)));
  headerPrimitives(p);
  bodyPrimitives(p);
  streamPrimitives(p, vm, script);
  httpCallPrimitives(p, script);
  registerUtilities(vm);
}

/** `headers()` and `trailers()` maps: get, add, replace, remove, pairs, counts. */
function headerPrimitives(p: Define): void {
  p('hget', (v, s) => {
    const which = v.num(2);
    const name = headerName(v, 3);
    const value =
      name.startsWith(':') || name === 'host'
        ? pseudo(s, which, name)
        : headerValueIn(headersOf(s, which), name);
    if (value === undefined) v.pushNil();
    else v.pushString(value);
    return 1;
  });
  p('hadd', (v, s) => {
    const which = v.num(2);
    if (which === 0) s.routeStale = true;
    const name = headerName(v, 3);
    const value = v.checkString(4, 'a header value');
    if (name.startsWith(':') || name === 'host') setPseudo(s, which, name, value);
    else headersOf(s, which).push(name, value);
    return 0;
  });
  p('hset', (v, s) => {
    const which = v.num(2);
    if (which === 0) s.routeStale = true;
    const name = headerName(v, 3);
    const value = v.checkString(4, 'a header value');
    if (name.startsWith(':') || name === 'host') setPseudo(s, which, name, value);
    else setHeader(headersOf(s, which), name, value);
    return 0;
  });
  p('hdel', (v, s) => {
    const which = v.num(2);
    if (which === 0) s.routeStale = true;
    const name = headerName(v, 3);
    if (name.startsWith(':')) throw new LuaRaise(`${name} cannot be removed`);
    removeHeader(headersOf(s, which), name);
    return 0;
  });
  p('hlist', (v, s) => {
    const which = v.num(2);
    const list = which === 0 ? requestPseudo(s) : which === 1 ? [':status', String(s.responseStatus)] : [];
    list.push(...headersOf(s, which));
    v.ensureStack(list.length);
    for (const item of list) v.pushString(item);
    return list.length;
  });
  p('hcount', (v, s) => {
    const name = headerName(v, 3);
    const h = headersOf(s, v.num(2));
    let n = 0;
    for (let i = 0; i < h.length; i += 2) if (h[i] === name) n++;
    v.pushNumber(n);
    return 1;
  });
  p('hat', (v, s) => {
    const name = headerName(v, 3);
    const h = headersOf(s, v.num(2));
    let at = v.num(4);
    for (let i = 0; i < h.length; i += 2)
      if (h[i] === name && at-- === 0) {
        v.pushString(h[i + 1] as string);
        return 1;
      }
    v.pushNil();
    return 1;
  });
}

/** `body()`, `bodyChunks()`, `trailers()` and the buffers they give. */
function bodyPrimitives(p: Define): void {
  // The body, its pieces and the trailers: 1 there, 2 none (the flow is over), 0 wait for more.
  const answer = (v: LuaVm, state: number, flow: Flow): number => {
    if (state === 0) flow.waiting = true;
    v.pushNumber(state);
    return 1;
  };
  p('body', (v, s) => {
    const flow = flowOf(s, v.num(2));
    if (!flow.end) return answer(v, 0, flow);
    return answer(v, flow.chunks.length === 0 ? 2 : 1, flow);
  });
  p('chunk', (v, s) => {
    const flow = flowOf(s, v.num(2));
    if (flow.nextChunk < flow.chunks.length) {
      flow.current = flow.chunks[flow.nextChunk++] as Buffer;
      return answer(v, 1, flow);
    }
    return answer(v, flow.end ? 2 : 0, flow);
  });
  p('trailers', (v, s) => {
    const flow = flowOf(s, v.num(2));
    return answer(v, flow.trailers !== null ? 1 : flow.end ? 2 : 0, flow);
  });
  p('blen', (v, s) => {
    v.pushNumber(bufferOf(s, v.num(2)).length);
    return 1;
  });
  p('bget', (v, s) => {
    const buffer = bufferOf(s, v.num(2));
    const index = v.num(3);
    const length = v.num(4);
    if (
      !(
        Number.isInteger(index) &&
        Number.isInteger(length) &&
        index >= 0 &&
        length >= 0 &&
        index + length <= buffer.length
      )
    )
      throw new LuaRaise('index/length must be >= 0 and (index + length) must be <= buffer size');
    v.pushBytes(buffer.subarray(index, index + length));
    return 1;
  });
  p('bset', (v, s) => {
    const which = v.num(2);
    const flow = flowOf(s, which % 2);
    if (which % 2 === REQUEST ? !s.stream.req.hasBody : flow.bodiless)
      throw new LuaRaise('setBytes() cannot give a body to a message that has none in this build');
    flow.replace(which < 2 ? null : flow.nextChunk - 1, v.bytes(3));
    return 0;
  });
}

/**
 * The filter metadata `metadata()` answers: the route's under the filter's own name, else under
 * `envoy.filters.http.lua`; else the virtual host's so; else empty.
 */
function routeMetadata(hit: RouteHit | null, name: string): Json {
  for (const level of hit === null ? [] : [hit.route, hit.vh]) {
    const mine = level.metadata?.[name] ?? level.metadata?.[LUA_NAME];
    if (mine !== undefined && mine !== null) return mine;
  }
  return {};
}

const LUA_NAME = 'envoy.filters.http.lua';

/** `respond()`, the logs, `streamInfo()`, `metadata()`, `connection()`, and the files `require` reads. */
function streamPrimitives(p: Define, vm: LuaVm, script: ScriptState): void {
  p('respond', (v, s) => {
    if (v.num(2) !== REQUEST) throw new LuaRaise('respond() can only be called in the request flow');
    const body = v.type(3) === 0 ? '' : v.checkString(3, 'the body');
    const headers: string[] = [];
    let status = 0;
    for (let i = 4; i + 1 <= v.top(); i += 2) {
      const name = headerName(v, i);
      const value = v.checkString(i + 1, 'a header value');
      if (name === ':status') status = Number(value);
      else headers.push(name, value);
    }
    if (!(Number.isInteger(status) && status >= 200 && status < 600))
      throw new LuaRaise('respond() needs a :status header between 200 and 599');
    s.reply = { status, body, headers };
    return 0;
  });
  vm.register('__proxy_log', (v) => {
    const level = LOG_LEVELS[v.num(2)] ?? 'info';
    script.host.log[level](`script log: ${v.bytes(3).toString('utf8')}`);
    return 0;
  });
  p('info', (v, s) => {
    const what = v.checkString(2, 'the field');
    v.pushString(streamInfoField(s, what));
    return 1;
  });
  // The stream info's dynamic metadata: later filters and %DYNAMIC_METADATA()% read what a script sets.
  p('dmget', (v, s) => {
    v.pushJson(s.stream.info.dynamicMetadata?.[v.checkString(2, 'the filter name')]);
    return 1;
  });
  p('dmset', (v, s) => {
    const ns = v.checkString(2, 'the filter name');
    const key = v.checkString(3, 'the key');
    setDynamicMetadata(s.stream.info, ns, { [key]: v.readJson(4) as Json });
    return 0;
  });
  p('dmlist', (v, s) => {
    v.pushJson(s.stream.info.dynamicMetadata ?? {});
    return 1;
  });
  p('fstate', (v, s) => {
    const entry = s.stream.info.filterState?.get(v.checkString(2, 'the object name'));
    const field = v.type(3) === 0 ? undefined : v.checkString(3, 'the field name');
    const value = field === undefined ? entry?.value : objectField(entry?.value, field);
    if (value === undefined || value === null) v.pushNil();
    else v.pushString(typeof value === 'string' ? value : JSON.stringify(value));
    return 1;
  });
  p('reroute', (_v, s) => {
    s.routeStale = false;
    s.stream.clearRouteCache();
    return 0;
  });
  p('context', (v, s) => {
    v.pushJson(s.context);
    return 1;
  });
  p('metadata', (v, s) => {
    s.settleRoute();
    v.pushJson(routeMetadata(s.stream.route, s.filterName));
    return 1;
  });
  p('ssl', (v, s) => {
    const peer = s.stream.req.peer;
    const what = v.checkString(2, 'the field');
    if (peer === undefined) {
      v.pushNil();
      return 1;
    }
    const identity = peer.get();
    if (what === 'tls') v.pushBool(true);
    else if (what === 'presented') v.pushBool(identity.subject !== '');
    else if (what === 'subject') v.pushString(identity.subject);
    else v.pushJson(what === 'uriSans' ? identity.uriSans : identity.dnsSans);
    return 1;
  });
  // The SSL object's other facts (TlsFacts), by name; the prelude makes the object only on TLS.
  p('tls', (v, s) => {
    const facts = s.stream.req.peer?.facts();
    const what = v.checkString(2, 'the field') as keyof TlsFacts;
    const value = facts?.[what];
    if (value === undefined) throw new LuaRaise('object used outside of proper scope');
    v.pushJson(what === 'pem' ? encodeURIComponent(value as string) : value);
    return 1;
  });
  vm.register('__proxy_env', (v) => {
    const value = process.env[v.checkString(1, 'the name')];
    if (value === undefined) v.pushNil();
    else v.pushString(value);
    return 1;
  });
  vm.register('__proxy_readfile', (v) => {
    try {
      v.pushString(readFileSync(v.checkString(1, 'the path')).toString('latin1'));
    } catch {
      v.pushNil();
    }
    return 1;
  });
}

/** What `streamInfo()`'s address, protocol and name methods answer. */
function streamInfoField(s: StreamState, what: string): string {
  const req = s.stream.req;
  switch (what) {
    case 'protocol':
      return req.protocol;
    case 'local':
      return req.originalDst ?? req.localAddress ?? '';
    case 'directLocal':
      return req.localAddress ?? '';
    case 'directRemote':
      return `${req.remoteIp}:${req.remotePort ?? 0}`;
    case 'remote':
      return s.stream.info.downstreamRemote;
    case 'sni':
      return req.peer?.get().serverName ?? '';
    case 'route':
      s.settleRoute();
      return s.stream.route?.route.name ?? '';
    default:
      throw new LuaRaise(`no stream info field ${what}`);
  }
}

/** A filter state object's field, for an object that has fields. */
function objectField(value: Json | undefined, field: string): Json | undefined {
  return value !== null && typeof value === 'object' && !Array.isArray(value) ? value[field] : undefined;
}

/** `:authority`, `:path`, `:method`, `:scheme` of a request, first in `pairs()` as the reference lists them. */
function requestPseudo(s: StreamState): string[] {
  const req = s.stream.req;
  return [':authority', req.authority, ':path', req.path, ':method', req.method, ':scheme', req.scheme];
}

/** Every value of `name` joined by `,` (as the reference's `get` answers), or undefined. */
function headerValueIn(headers: string[], name: string): string | undefined {
  let out: string | undefined;
  for (let i = 0; i < headers.length; i += 2)
    if (headers[i] === name) out = out === undefined ? headers[i + 1] : `${out},${headers[i + 1]}`;
  return out;
}
