import type bunyan from 'bunyan';
import type { JsonObject } from '../../../../../events/config.js';
import type { Counter } from '../../../../stats/store.js';
import type { ClusterLookup } from '../../../pool/cluster-traffic.js';
import type { FilterStream } from '../api.js';
import type { CallResult, ClusterCall } from '../cluster-call.js';
import type { LuaVm } from './vm.js';

/** Request and response: the two coroutines a stream may run, and the flows they read. */
export type Dir = 0 | 1;
export const REQUEST: Dir = 0;
export const RESPONSE: Dir = 1;

export const EMPTY = Buffer.alloc(0);

/** One direction as its script sees it: the body so far, its end, the trailers. */
export class Flow {
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
  /** A response declared empty (a request's `hasBody` says so for it). */
  bodiless = false;
  /** `setBytes()` changed the body: what the filter holds goes on as `chunks` say. */
  replaced = false;

  /** The body so far in one piece (the pieces stay apart for `bodyChunks()`). */
  body(): Buffer {
    if (this.whole === null || this.whole.length !== this.bytes()) this.whole = Buffer.concat(this.chunks);
    return this.whole;
  }

  /** `setBytes()`: the whole body (`piece` null) or the piece `bodyChunks()` handed at `piece`. */
  replace(piece: number | null, bytes: Buffer): void {
    if (piece === null) {
      this.chunks = [bytes];
      this.nextChunk = 1;
    } else this.chunks[piece] = bytes;
    this.current = bytes;
    this.whole = null;
    this.replaced = true;
  }

  bytes(): number {
    let n = 0;
    for (const c of this.chunks) n += c.length;
    return n;
  }
}

/** What the primitives read and change of one request (filter.ts's `LuaStream`). */
export interface StreamState {
  readonly flows: [Flow, Flow];
  /** The request's filter handle. */
  readonly stream: FilterStream;
  /** The filter's `http_filters` name, under which a route's metadata is its. */
  readonly filterName: string;
  responseStatus: number;
  responseHeaders: string[] | null;
  reply: { status: number; body: string; headers: string[] } | null;
  /** `httpCall()` in flight or answered, for the direction that made it. */
  http: { dir: Dir; call: ClusterCall | null; result: CallResult | null } | null;
  /** The call's answer: kept for the script, which resumes if it waits for it. */
  httpDone(result: CallResult): void;
  /** Set when the script changes the request's headers; `settleRoute()` routes it again then. */
  routeStale: boolean;
  settleRoute(): void;
  /** The route's `filter_context` (`filterContext()`). */
  readonly context: JsonObject;
}

/** What a script's state shares with the requests that run it on this worker. */
export interface ScriptHost {
  log: bunyan;
  errors: Counter;
  /** The connection manager's clusters, for `httpCall()`. */
  clusters: ClusterLookup;
}

/** What the primitives see of a script: its live requests by id, and its host. */
export interface ScriptState {
  readonly streams: Map<number, StreamState>;
  readonly host: ScriptHost;
}

/** A primitive acting on one request: reads its arguments from the VM, pushes results, returns how many. */
export type StreamPrimitive = (vm: LuaVm, s: StreamState) => number;
/** Registers a stream primitive under `__proxy_<name>`. */
export type Define = (name: string, fn: StreamPrimitive) => void;

/** A header name argument, lowercase as the proxy holds names. */
export function headerName(vm: LuaVm, idx: number): string {
  return vm.checkString(idx, 'a header name').toLowerCase();
}
