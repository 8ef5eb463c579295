import type { JsonObject } from '../../../../events/config.js';
import type { FieldTable } from '../../../bootstrap/honoured.js';
import type { Report } from '../../../bootstrap/report.js';
import type { Scope } from '../../../stats/store.js';
import type { StreamInfo } from '../../access-log/stream-info.js';
import type { HttpRequest } from '../../codec/request.js';
import type { RuntimeLookup } from '../runtime-fraction.js';
import type { FilterChain } from './chain.js';

/** The decoder's answer, as the reference's `FilterHeadersStatus`: go on to the next filter, or wait. */
export const CONTINUE = 0;
/** The filter holds the request until it calls `continueDecoding()` (or answers it itself). */
export const STOP_ITERATION = 1;
export type FilterStatus = typeof CONTINUE | typeof STOP_ITERATION;

/** What a stream filter sees of its request and may do with it. */
export interface FilterStream {
  readonly req: HttpRequest;
  /** The access log's view: filters set response flags here. */
  readonly info: StreamInfo;
  /** The cluster the route sends to (the first of weighted clusters), or null. */
  readonly routeCluster: string | null;
  /** This filter's per-route config, most specific level first (route, then virtual host), or undefined. */
  perRoute(configType: string): unknown;
  /** Resumes the chain after `STOP_ITERATION`; does nothing once the request is answered. */
  continueDecoding(): void;
  /** Answers the request from the proxy; later filters and the router never see it. */
  sendLocalReply(status: number, body: string, headers?: string[]): void;
  /** True once the request was answered or reset (a held filter checks it before acting). */
  readonly ended: boolean;
}

/** One filter's state for one request. Only `decodeHeaders` is required. */
export interface StreamFilter {
  decodeHeaders(stream: FilterStream): FilterStatus;
  /** The response head on its way downstream (upstream or local), to read or add headers to. */
  encodeHeaders?(status: number, headers: string[]): void;
  /** The request is over (answered, reset or timed out): release timers and counts. */
  onDestroy?(): void;
}

/** What a filter's instance shares across the requests of one connection manager. */
export interface FilterContext {
  /** The connection manager's `http.<stat_prefix>.` scope. */
  scope: Scope;
  runtime: RuntimeLookup;
}

/** Makes each request's filter state; built once per connection manager. */
export type StreamFilterMaker = () => StreamFilter;

/**
 * One HTTP filter extension, found by its config message (the loader resolved every name and
 * type URL of it into that, through src/bootstrap/extensions.ts). `compile` is the one compile
 * step shared by `--mode validate` and serving; it refuses unknown fields by name. A filter
 * either fills one of the chain's built-in slots (`install`) or runs per request (`start`).
 */
export interface HttpFilterFactory<C = unknown> {
  /** The config message, as `CONFIG_TYPE` of src/bootstrap/extensions.ts spells it. */
  configType: string;
  /** The field tables `compile` checks against, by message name (docs/bootstrap.md). */
  fieldTables: Record<string, FieldTable>;
  compile(config: JsonObject, path: string, report: Report): C;
  /** Places the compiled config into the chain; absent: the filter runs per request through `start`. */
  install?(chain: FilterChain, config: C, path: string, report: Report): void;
  /** Makes the filter's per-request state, once per connection manager. */
  start?(config: C, ctx: FilterContext): StreamFilterMaker;
  /** The override's message when it is not the filter's own (`RBACPerRoute`). */
  perRouteType?: string;
  /** Compiles a route's or virtual host's override (`per_filter_config` / `typed_per_filter_config`). */
  perRoute?(config: JsonObject, path: string, report: Report): unknown;
}
