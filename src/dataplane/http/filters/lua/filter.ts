import {
  CONTINUE,
  type DataStatus,
  type FilterStatus,
  type FilterStream,
  STOP_ITERATION,
  STOP_ITERATION_AND_BUFFER,
  type StreamFilter,
} from '../api.js';
import type { CallResult } from '../cluster-call.js';
import type { JsonObject } from '../../../../../events/config.js';
import type { LuaConfig, LuaPerRouteConfig } from './config.js';
import {
  type Dir,
  EMPTY,
  Flow,
  REQUEST,
  RESPONSE,
  type ScriptHost,
  type ScriptState,
  type StreamState,
} from './flow.js';
import { PRELUDE } from './prelude.js';
import { registerPrimitives } from './primitives.js';
import { LuaVm, type VmLimits } from './vm.js';

/**
 * What one script may take on a worker: a run (from a start or a resume to its next wait)
 * past `runMs` is stopped with a Lua error, and the state's heap is capped (docs/lua.md).
 */
export const LUA_LIMITS: VmLimits = { runMs: 500, memoryBytes: 64 * 1024 * 1024 };

/** `step` answers of the prelude's driver (0 is done). */
const WAITING = 1;
const RESPONDED = 2;
const FAILED = 3;

/**
 * One script on one worker: its Lua state, loaded in the background when the connection
 * manager starts (the WebAssembly module compiles asynchronously); requests that come first wait.
 */
export class Script implements ScriptState {
  vm: LuaVm | null = null;
  loadError: string | null = null;
  onRequest = false;
  onResponse = false;
  readonly ready: Promise<void>;
  /** The requests whose coroutines are alive, by id: the primitives act on them. */
  readonly streams = new Map<number, StreamState>();

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

/**
 * A worker's scripts for one filter config: the default one (if any), each of `source_codes`,
 * and the scripts routes give of their own (`LuaPerRoute.source_code`), loaded on first use.
 */
export interface Scripts {
  main: Script | null;
  named: ReadonlyMap<string, Script>;
  /** By the route's compiled override: a route table discovered anew brings new ones, the old ones go with it. */
  ofRoutes: WeakMap<object, Script>;
  host: ScriptHost;
}

export function startScripts(config: LuaConfig, host: ScriptHost): Scripts {
  const named = new Map<string, Script>();
  for (const [name, code] of config.sources) named.set(name, new Script(code, `source_codes.${name}`, host));
  const main = config.main === null ? null : new Script(config.main.code, config.main.field, host);
  return { main, named, ofRoutes: new WeakMap(), host };
}

/** The script a request runs: the route's override (disabled, a named one, its own) or the default. */
function scriptFor(scripts: Scripts, perRoute: LuaPerRouteConfig | undefined): Script | null | undefined {
  if (perRoute === undefined || 'main' in perRoute) return scripts.main;
  if ('disabled' in perRoute) return null;
  if ('name' in perRoute) return scripts.named.get(perRoute.name);
  let script = scripts.ofRoutes.get(perRoute);
  if (script === undefined) {
    script = new Script(perRoute.code, 'source_code', scripts.host);
    scripts.ofRoutes.set(perRoute, script);
  }
  return script;
}

const EMPTY_CONTEXT: JsonObject = Object.freeze({});

let nextId = 1;
/** The Lua filter of one request: runs `envoy_on_request` and `envoy_on_response` as coroutines. */
export class LuaStream implements StreamFilter, StreamState {
  readonly id = nextId++;
  script: Script | null = null;
  readonly flows: [Flow, Flow] = [new Flow(), new Flow()];
  /** The response head while `envoy_on_response` may change it. */
  responseStatus = 0;
  responseHeaders: string[] | null = null;
  /** `respond()`'s answer, sent once the coroutine has yielded (never from inside Lua). */
  reply: { status: number; body: string; headers: string[] } | null = null;
  http: StreamState['http'] = null;
  /** The script changed the request's headers since the route was last chosen. */
  routeStale = false;
  /** The route's `filter_context`. */
  context: JsonObject = EMPTY_CONTEXT;

  constructor(
    private readonly scripts: Scripts,
    /** `clear_route_cache`. */
    private readonly clearRoutes: boolean,
    private readonly configType: string,
    /** Its `http_filters` name, by which a route may key its override. */
    readonly filterName: string,
  ) {}

  /** The request, for the primitives (set before any script runs). */
  get stream(): FilterStream {
    return this.flows[REQUEST].stream as FilterStream;
  }

  decodeHeaders(stream: FilterStream): FilterStatus {
    const flow = this.flows[REQUEST];
    flow.stream = stream;
    flow.end = !stream.req.hasBody;
    // A route naming a script this filter does not have runs none, as the reference.
    const perRoute = stream.perRoute(this.configType, this.filterName) as LuaPerRouteConfig | undefined;
    const script = scriptFor(this.scripts, perRoute);
    if (script == null) return CONTINUE;
    if (perRoute !== undefined) this.context = perRoute.context;
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

  decodeData(stream: FilterStream, chunk: Buffer, end: boolean): DataStatus {
    return this.data(REQUEST, stream, chunk, end);
  }

  decodeTrailers(stream: FilterStream, trailers: string[]): DataStatus {
    return this.trailers(REQUEST, stream, trailers);
  }

  encodeHeaders(status: number, headers: string[], stream: FilterStream): FilterStatus {
    const script = this.script;
    if (script?.vm == null || !script.onResponse || this.reply !== null) return CONTINUE;
    this.flows[RESPONSE].stream = stream;
    this.flows[RESPONSE].bodiless = stream.responseLength === 0;
    this.responseStatus = status;
    this.responseHeaders = headers;
    return this.outcome(this.run(RESPONSE, false));
  }

  encodeData(stream: FilterStream, chunk: Buffer, end: boolean): DataStatus {
    return this.data(RESPONSE, stream, chunk, end);
  }

  encodeTrailers(stream: FilterStream, trailers: string[]): DataStatus {
    return this.trailers(RESPONSE, stream, trailers);
  }

  httpDone(result: CallResult): void {
    const http = this.http;
    if (http === null) return;
    http.call = null;
    http.result = result;
    const flow = this.flows[http.dir];
    if (flow.waiting && flow.stream !== null && !flow.stream.ended)
      this.resumed(http.dir, flow.stream, false);
  }

  onDestroy(): void {
    this.http?.call?.cancel();
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
  private data(dir: Dir, stream: FilterStream, chunk: Buffer, end: boolean): DataStatus {
    const flow = this.flows[dir];
    if (chunk.length > 0) flow.chunks.push(chunk);
    if (end) flow.end = true;
    if (!flow.waiting) return CONTINUE;
    return this.resumed(dir, stream, true);
  }

  private trailers(dir: Dir, stream: FilterStream, trailers: string[]): DataStatus {
    const flow = this.flows[dir];
    flow.trailers = trailers;
    flow.end = true;
    if (!flow.waiting) return CONTINUE;
    return this.resumed(dir, stream, false);
  }

  /**
   * Resumes a waiting coroutine from a data or trailers callback. Until it is done the
   * piece is buffered (within the listener's limit, past it 413 or 500, as the reference's
   * `body()`); once done the filter continues from inside the callback, which lets this
   * piece and the held ones go on in order. A body the script changed (`setBytes()`) goes on
   * in place of the held pieces and of this one (`inData`).
   */
  private resumed(dir: Dir, stream: FilterStream, inData: boolean): DataStatus {
    const flow = this.flows[dir];
    flow.waiting = false;
    const status = this.outcome(this.run(dir, true));
    if (status === STOP_ITERATION) return flow.waiting ? STOP_ITERATION_AND_BUFFER : STOP_ITERATION;
    const replaced = flow.replaced;
    if (replaced) {
      // Every piece so far is held here (the script held the headers since it started) or is this one.
      const body = flow.body();
      stream.replaceBuffered(dir === REQUEST, body);
      const length = flow.end ? body.length : -1;
      if (dir === REQUEST) stream.req.contentLength = length;
      else stream.responseLength = length;
    }
    if (dir === REQUEST) stream.continueDecoding();
    else stream.continueEncoding();
    return replaced && inData ? EMPTY : CONTINUE;
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
    this.settleRoute();
    if (code === FAILED) this.fail(dir, error);
    return code;
  }

  /**
   * Routes the request again if the script changed its headers (`clear_route_cache`, on unless
   * the config turns it off, as the reference); before the next filter or a read of the route.
   */
  settleRoute(): void {
    if (!this.routeStale) return;
    this.routeStale = false;
    if (this.clearRoutes) this.stream.clearRouteCache();
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
