import { readFileSync } from 'node:fs';
import type bunyan from 'bunyan';
import type { Json } from '../../../../../events/config.js';
import type { Counter } from '../../../../stats/store.js';
import { setDynamicMetadata } from '../../../access-log/stream-info.js';
import { headerValue, removeHeader, setHeader } from '../../../codec/request.js';
import {
  CONTINUE,
  type FilterStatus,
  type FilterStream,
  STOP_ITERATION,
  STOP_ITERATION_AND_BUFFER,
  type StreamFilter,
} from '../api.js';
import type { LuaConfig, LuaPerRouteConfig } from './config.js';
import { PRELUDE } from './prelude.js';
import { LuaRaise, LuaVm, type VmLimits } from './vm.js';

/**
 * What one script may take on a worker: a run (from a start or a resume to its next wait)
 * past `runMs` is stopped with a Lua error, and the state's heap is capped (docs/lua.md).
 */
export const LUA_LIMITS: VmLimits = { runMs: 500, memoryBytes: 64 * 1024 * 1024 };

/** `step` answers of the prelude's driver (0 is done). */
const WAITING = 1;
const RESPONDED = 2;
const FAILED = 3;

/** Request and response: the two coroutines a stream may run. */
type Dir = 0 | 1;
const REQUEST: Dir = 0;
const RESPONSE: Dir = 1;

const LOG_LEVELS = ['trace', 'trace', 'debug', 'info', 'warn', 'error', 'fatal'] as const;

/** What a script's state shares with the requests that run it on this worker. */
export interface ScriptHost {
  log: bunyan;
  errors: Counter;
}

/**
 * One script on one worker: its Lua state, loaded in the background when the connection
 * manager starts (the WebAssembly module compiles asynchronously); requests that come first wait.
 */
export class Script {
  vm: LuaVm | null = null;
  loadError: string | null = null;
  onRequest = false;
  onResponse = false;
  readonly ready: Promise<void>;
  /** The requests whose coroutines are alive, by id: the primitives act on them. */
  readonly streams = new Map<number, LuaStream>();

  constructor(
    code: string,
    readonly chunkName: string,
    readonly host: ScriptHost,
  ) {
    this.ready = this.load(code);
  }

  private async load(code: string): Promise<void> {
    try {
      const vm = await LuaVm.create(LUA_LIMITS);
      registerPrimitives(vm, this);
      const prelude = vm.run(PRELUDE, '=prelude');
      if (!prelude.ok) throw new Error(prelude.error);
      const loaded = vm.run(code, `=${this.chunkName}`);
      if (!loaded.ok) throw new Error(loaded.error);
      this.onRequest = vm.hasFunction('envoy_on_request');
      this.onResponse = vm.hasFunction('envoy_on_response');
      this.vm = vm;
    } catch (err) {
      this.loadError = (err as Error).message;
      this.host.log.error(
        `lua: ${this.chunkName} failed to load, its requests are answered 500: ${this.loadError}`,
      );
    }
  }
}

/** A worker's scripts for one filter config: the default one and each of `source_codes`. */
export interface Scripts {
  main: Script;
  named: ReadonlyMap<string, Script>;
}

export function startScripts(config: LuaConfig, host: ScriptHost): Scripts {
  const named = new Map<string, Script>();
  for (const [name, code] of config.sources) named.set(name, new Script(code, `source_codes.${name}`, host));
  return { main: new Script(config.inlineCode, 'inline_code', host), named };
}

let nextId = 1;

/** One direction as its script sees it: the body so far, its end, the trailers. */
class Flow {
  chunks: Buffer[] = [];
  /** The body is whole: its last piece or the trailers came (or there is none). */
  end = false;
  trailers: string[] | null = null;
  /** The coroutine yielded for more of this flow. */
  waiting = false;
  /** The next piece `bodyChunks()` hands out, and the one it handed last. */
  nextChunk = 0;
  current: Buffer = EMPTY;
  private whole: Buffer | null = null;
  /** The filter handle of this direction (each filter of a request has its own). */
  stream: FilterStream | null = null;

  /** The body so far in one piece (the pieces stay apart for `bodyChunks()`). */
  body(): Buffer {
    if (this.whole === null || this.whole.length !== this.bytes()) this.whole = Buffer.concat(this.chunks);
    return this.whole;
  }

  private bytes(): number {
    let n = 0;
    for (const c of this.chunks) n += c.length;
    return n;
  }
}

const EMPTY = Buffer.alloc(0);

/** The Lua filter of one request: runs `envoy_on_request` and `envoy_on_response` as coroutines. */
export class LuaStream implements StreamFilter {
  readonly id = nextId++;
  script: Script | null = null;
  readonly flows: [Flow, Flow] = [new Flow(), new Flow()];
  /** The response head while `envoy_on_response` may change it. */
  responseStatus = 0;
  responseHeaders: string[] | null = null;
  /** `respond()`'s answer, sent once the coroutine has yielded (never from inside Lua). */
  reply: { status: number; body: string; headers: string[] } | null = null;

  constructor(
    private readonly scripts: Scripts,
    private readonly configType: string,
  ) {}

  /** The request, for the primitives (set before any script runs). */
  get stream(): FilterStream {
    return this.flows[REQUEST].stream as FilterStream;
  }

  decodeHeaders(stream: FilterStream): FilterStatus {
    const flow = this.flows[REQUEST];
    flow.stream = stream;
    flow.end = !stream.req.hasBody;
    const perRoute = stream.perRoute(this.configType) as LuaPerRouteConfig | undefined;
    if (perRoute !== undefined && 'disabled' in perRoute) return CONTINUE;
    // A route naming a script this filter does not have runs none, as the reference.
    const script = perRoute === undefined ? this.scripts.main : this.scripts.named.get(perRoute.name);
    if (script === undefined) return CONTINUE;
    this.script = script;
    if (script.vm === null && script.loadError === null) {
      flow.waiting = true;
      void script.ready.then(() => {
        flow.waiting = false;
        if (!stream.ended && this.startRequest() === CONTINUE) stream.continueDecoding();
      });
      return STOP_ITERATION;
    }
    return this.startRequest();
  }

  private startRequest(): FilterStatus {
    const script = this.script as Script;
    if (script.vm === null) {
      this.stream.sendLocalReply(500, 'lua script failed to load');
      return STOP_ITERATION;
    }
    if (!script.onRequest) return CONTINUE;
    return this.outcome(this.run(REQUEST, false));
  }

  decodeData(stream: FilterStream, chunk: Buffer, end: boolean): FilterStatus {
    return this.data(REQUEST, stream, chunk, end);
  }

  decodeTrailers(stream: FilterStream, trailers: string[]): FilterStatus {
    return this.trailers(REQUEST, stream, trailers);
  }

  encodeHeaders(status: number, headers: string[], stream: FilterStream): FilterStatus {
    const script = this.script;
    if (script?.vm == null || !script.onResponse || this.reply !== null) return CONTINUE;
    this.flows[RESPONSE].stream = stream;
    this.responseStatus = status;
    this.responseHeaders = headers;
    return this.outcome(this.run(RESPONSE, false));
  }

  encodeData(stream: FilterStream, chunk: Buffer, end: boolean): FilterStatus {
    return this.data(RESPONSE, stream, chunk, end);
  }

  encodeTrailers(stream: FilterStream, trailers: string[]): FilterStatus {
    return this.trailers(RESPONSE, stream, trailers);
  }

  onDestroy(): void {
    const script = this.script;
    if (script === null) return;
    script.streams.delete(this.id);
    const vm = script.vm;
    if (vm !== null) {
      vm.call('__proxy_drop', this.id);
      vm.clear();
    }
  }

  /** A body piece: kept for the script; a waiting script resumes with it. */
  private data(dir: Dir, stream: FilterStream, chunk: Buffer, end: boolean): FilterStatus {
    const flow = this.flows[dir];
    if (chunk.length > 0) flow.chunks.push(chunk);
    if (end) flow.end = true;
    if (!flow.waiting) return CONTINUE;
    return this.resumed(dir, stream);
  }

  private trailers(dir: Dir, stream: FilterStream, trailers: string[]): FilterStatus {
    const flow = this.flows[dir];
    flow.trailers = trailers;
    flow.end = true;
    if (!flow.waiting) return CONTINUE;
    return this.resumed(dir, stream);
  }

  /**
   * Resumes a waiting coroutine from a data or trailers callback. Until it is done the
   * piece is buffered (within the listener's limit, past it 413 or 500, as the reference's
   * `body()`); once done the filter continues from inside the callback, which lets this
   * piece and the held ones go on in order.
   */
  private resumed(dir: Dir, stream: FilterStream): FilterStatus {
    const flow = this.flows[dir];
    flow.waiting = false;
    const status = this.outcome(this.run(dir, true));
    if (status === STOP_ITERATION) return flow.waiting ? STOP_ITERATION_AND_BUFFER : STOP_ITERATION;
    if (dir === REQUEST) stream.continueDecoding();
    else stream.continueEncoding();
    return CONTINUE;
  }

  /** What a coroutine's step means for its direction. */
  private outcome(code: number): FilterStatus {
    if (code === WAITING) return STOP_ITERATION;
    if (code === RESPONDED) {
      const reply = this.reply as NonNullable<LuaStream['reply']>;
      this.stream.sendLocalReply(reply.status, reply.body, reply.headers);
      return STOP_ITERATION;
    }
    return CONTINUE;
  }

  /** Starts or resumes one coroutine; logs and counts its error. Answers the driver's code. */
  private run(dir: Dir, resume: boolean): number {
    const script = this.script as Script;
    const vm = script.vm as LuaVm;
    script.streams.set(this.id, this);
    const called = resume
      ? vm.call('__proxy_resume', this.id, dir)
      : vm.call('__proxy_start', this.id, dir, dir === REQUEST ? 'envoy_on_request' : 'envoy_on_response');
    if (!called.ok) {
      this.fail(dir, called.error);
      return FAILED;
    }
    const code = vm.num(1);
    const error = code === FAILED ? vm.str(2) : '';
    vm.clear();
    if (code === FAILED) this.fail(dir, error);
    return code;
  }

  /**
   * A script error, as the reference handles one: logged, counted, and the stream goes on
   * without the script (the prelude dropped its coroutine).
   */
  private fail(dir: Dir, error: string): void {
    const script = this.script as Script;
    this.flows[dir].waiting = false;
    script.host.errors.inc();
    script.host.log.error(`script log: ${error}`);
  }
}

// ---- the primitives the prelude's handles call ----

/** The request (0) or response (1) flow a handle names. */
function flowOf(s: LuaStream, dir: number): Flow {
  const flow = s.flows[dir];
  if (flow?.stream == null) throw new LuaRaise('object used outside of proper scope');
  return flow;
}

/** A body (0, 1) or the piece `bodyChunks()` handed last (2, 3). */
function bufferOf(s: LuaStream, which: number): Buffer {
  const flow = flowOf(s, which % 2);
  return which < 2 ? flow.body() : flow.current;
}

/** The stream a primitive acts on (its first argument), or a Lua error when it is over. */
function streamOf(vm: LuaVm, script: Script): LuaStream {
  const stream = script.streams.get(vm.num(1));
  if (stream === undefined || stream.flows[REQUEST].stream === null)
    throw new LuaRaise('object used outside of proper scope');
  return stream;
}

/** Request headers (0), response headers (1), request trailers (2), response trailers (3). */
function headersOf(s: LuaStream, which: number): string[] {
  if (which === 0) return s.stream.req.headers;
  if (which === 1 && s.responseHeaders !== null) return s.responseHeaders;
  const trailers = which >= 2 ? s.flows[which - 2]?.trailers : null;
  if (trailers != null) return trailers;
  throw new LuaRaise('object used outside of proper scope');
}

function pseudo(s: LuaStream, which: number, name: string): string | undefined {
  if (which === 1) return name === ':status' ? String(s.responseStatus) : undefined;
  return which === 0 ? headerValue(s.stream.req, name) : undefined;
}

/** Sets a request pseudo header; the others cannot change here. */
function setPseudo(s: LuaStream, which: number, name: string, value: string): void {
  const req = s.stream.req;
  if (which === 0 && name === ':path') req.path = value;
  else if (which === 0 && name === ':method') req.method = value;
  else if (which === 0 && (name === ':authority' || name === 'host')) req.authority = value.toLowerCase();
  else throw new LuaRaise(`${name} cannot be changed by a script in this build`);
}

function headerName(vm: LuaVm, idx: number): string {
  return vm.checkString(idx, 'a header name').toLowerCase();
}

function registerPrimitives(vm: LuaVm, script: Script): void {
  const p = (name: string, fn: (vm: LuaVm, s: LuaStream) => number) =>
    vm.register(`__proxy_${name}`, (v) => fn(v, streamOf(v, script)));
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
    const name = headerName(v, 3);
    const value = v.checkString(4, 'a header value');
    if (name.startsWith(':') || name === 'host') setPseudo(s, which, name, value);
    else headersOf(s, which).push(name, value);
    return 0;
  });
  p('hset', (v, s) => {
    const which = v.num(2);
    const name = headerName(v, 3);
    const value = v.checkString(4, 'a header value');
    if (name.startsWith(':') || name === 'host') setPseudo(s, which, name, value);
    else setHeader(headersOf(s, which), name, value);
    return 0;
  });
  p('hdel', (v, s) => {
    const name = headerName(v, 3);
    if (name.startsWith(':')) throw new LuaRaise(`${name} cannot be removed`);
    removeHeader(headersOf(s, v.num(2)), name);
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
  p('bset', () => {
    throw new LuaRaise('setBytes() is not supported by this build');
  });
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
    const req = s.stream.req;
    const what = v.checkString(2, 'the field');
    const value =
      what === 'protocol'
        ? req.protocol
        : what === 'local'
          ? (req.localAddress ?? '')
          : what === 'directRemote'
            ? `${req.remoteIp}:${req.remotePort ?? 0}`
            : what === 'remote'
              ? s.stream.info.downstreamRemote
              : '';
    v.pushString(value);
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
  p('metadata', (v) => {
    // Route metadata is advisory in this build (not compiled), so a script's filter metadata is empty.
    v.pushJson({});
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

/** `:authority`, `:path`, `:method`, `:scheme` of a request, first in `pairs()` as the reference lists them. */
function requestPseudo(s: LuaStream): string[] {
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
