import type bunyan from 'bunyan';
import type { JsonObject } from '../../../../events/config.js';
import type { ExtensionIdentity } from '../../../bootstrap/extensions.js';
import type { FieldTable } from '../../../bootstrap/honoured.js';
import type { Report } from '../../../bootstrap/report.js';
import type { Scope } from '../../../stats/store.js';
import type { StreamInfo } from '../../access-log/stream-info.js';
import type { HttpRequest } from '../../codec/request.js';
import type { ClusterLookup } from '../../pool/cluster-traffic.js';
import type { CorsPolicy } from '../cors.js';
import type { CsrfPolicy } from '../csrf.js';
import type { RuntimeLookup } from '../runtime-fraction.js';
import type { TapRegistry } from '../tap-registry.js';
import type { FilterChain } from './chain.js';

/**
 * A filter's answer to a callback, as the reference's `Filter*Status`: go on to the next
 * filter, or hold what it was given (and, for headers, everything after it) until the filter
 * calls `continueDecoding()` / `continueEncoding()` or answers the request itself.
 */
export const CONTINUE = 0;
/**
 * Headers and trailers: hold them until the filter continues. Data: hold this piece without a
 * size check; past the buffer limit the proxy stops reading more (the reference's
 * `StopIterationAndWatermark`).
 */
export const STOP_ITERATION = 1;
/**
 * Data only: keep this piece in the filter's buffer, with the pieces before it the filter held,
 * and give the filter the next ones too. Past the buffer limit the request is answered 413
 * (decoding) or 500 (encoding, before the response started; reset after), as the reference.
 */
export const STOP_ITERATION_AND_BUFFER = 2;
export type FilterStatus = typeof CONTINUE | typeof STOP_ITERATION | typeof STOP_ITERATION_AND_BUFFER;
/**
 * A data or trailers callback's answer: a status, or bytes, which continue. From a data
 * callback they go on in place of the piece it was given (after any pieces it held); from a
 * trailers callback they are the body's last bytes, before the trailers (a compressor's end).
 * A filter that changes a body's length says so first, in its headers callback
 * (`req.contentLength`, `responseLength` set to -1).
 */
export type DataStatus = FilterStatus | Buffer;

/**
 * What the filters read of a route or its virtual host (src/dataplane/router/table.ts's
 * `CompiledRoute`, `CompiledVirtualHost`; named by shape, as the route table compiles the
 * filters' overrides through this registry).
 */
export interface RouteLevel {
  readonly cors: CorsPolicy | null;
  readonly csrf: CsrfPolicy | null;
  /** The per-request filters' overrides, by config message. */
  readonly perFilter: ReadonlyMap<string, unknown> | null;
  /** `metadata.filter_metadata`: each filter's, by filter name (what Lua's `metadata()` reads); null for none. */
  readonly metadata?: JsonObject | null;
}

/** A route the table matched, with its virtual host. */
export interface RouteHit {
  readonly vh: RouteLevel;
  readonly route: RouteLevel & { readonly action: { readonly kind: string }; readonly name: string };
}

/**
 * `hit` when its route sends to a cluster, else null: as in the reference's v2 filters, a
 * redirect or direct response route carries no CORS or CSRF policy.
 */
export function forwardingRoute(hit: RouteHit | null): RouteHit | null {
  const kind = hit?.route.action.kind;
  return kind === 'cluster' || kind === 'weighted' ? hit : null;
}

/**
 * What a stream filter sees of its request and may do with it. Each filter of a request has
 * its own: `continueDecoding()` resumes the chain after the filter that calls it.
 */
export interface FilterStream {
  /** The request; a decoder filter may change its headers (then `clearRouteCache()`). */
  readonly req: HttpRequest;
  /**
   * The access log's view: response flags, and the dynamic metadata and filter state
   * (`setDynamicMetadata`, `setFilterState` of src/dataplane/access-log/stream-info.ts) that
   * later filters and `%DYNAMIC_METADATA(...)%` / `%FILTER_STATE(...)%` read.
   */
  readonly info: StreamInfo;
  /** The route the request matched as it is now (after any `clearRouteCache()`), or null. */
  readonly route: RouteHit | null;
  /** The cluster the route sends to (the first of weighted clusters), or null. */
  readonly routeCluster: string | null;
  /**
   * This filter's per-route config, most specific level first (route, then virtual host), or
   * undefined: at each level the one keyed by `name` (the filter's `http_filters` name) if given,
   * else the one keyed by the filter's extension name.
   */
  perRoute(configType: string, name?: string): unknown;
  /** Routes the request again, after a filter changed what the routes match on. */
  clearRouteCache(): void;
  /** Resumes the request's filters after this one (headers, then held data and trailers). */
  continueDecoding(): void;
  /** Resumes the response's filters after this one. */
  continueEncoding(): void;
  /** The request body this filter holds (`STOP_ITERATION_AND_BUFFER`), in one piece; null when none. */
  readonly decodingBuffer: Buffer | null;
  /** The response body this filter holds, in one piece; null when none. */
  readonly encodingBuffer: Buffer | null;
  /**
   * Replaces what this filter holds of the request (`decode`) or response body with `bytes`,
   * which go on when it continues (the reference's `modifyDecodingBuffer`; Lua's `setBytes()`).
   */
  replaceBuffered(decode: boolean, bytes: Buffer): void;
  /** The status of the response head on its way, which an encoder holding it may change (the gRPC bridge's 503). */
  responseStatus: number;
  /**
   * Answers the request from the proxy; later filters and the router never see it. Once the
   * response has started it resets the stream instead. Nothing after it reaches any filter.
   * A gRPC request's answer carries `grpcStatus` if given, else the one `status` maps to (the
   * reference's `grpc_status`: the rate limit filters' RESOURCE_EXHAUSTED).
   */
  sendLocalReply(status: number, body: string, headers?: string[], grpcStatus?: number): void;
  /** True once the request was answered or reset (a held filter checks it before acting). */
  readonly ended: boolean;
  /**
   * The response body's declared length, -1 when unknown (the downstream then frames it by
   * chunks or by closing); an encoder that changes the body's length sets -1 in `encodeHeaders`,
   * or, holding the head, the length of what it then sends (the gRPC bridge).
   */
  responseLength: number;
  /**
   * True while the encoders see one of the proxy's own replies: its body comes whole, in one
   * `encodeData` with `end`, and a filter that rewrites bodies returns the whole rewritten body.
   */
  readonly localReply: boolean;
}

/**
 * One filter's state for one request. Only `decodeHeaders` is required; a missing callback
 * continues. Decoders run in chain order, encoders in reverse, as the reference runs them.
 * `end` marks the last piece of a body that has no trailers (it may be empty).
 */
export interface StreamFilter {
  decodeHeaders(stream: FilterStream): FilterStatus;
  decodeData?(stream: FilterStream, chunk: Buffer, end: boolean): DataStatus;
  /** The request's trailers (HTTP/2), to read or change in place. */
  decodeTrailers?(stream: FilterStream, trailers: string[]): DataStatus;
  /**
   * The response head on its way downstream, to read or change in place. The proxy's own
   * replies pass here too, but cannot be held (a status other than `CONTINUE` is ignored).
   */
  encodeHeaders?(status: number, headers: string[], stream: FilterStream): FilterStatus | undefined;
  /**
   * The response body on its way downstream. The body of the proxy's own reply passes here too,
   * in one piece with `end`; it cannot be held (a status is ignored), but bytes returned go on
   * in its place (the compressor's).
   */
  encodeData?(stream: FilterStream, chunk: Buffer, end: boolean): DataStatus;
  encodeTrailers?(stream: FilterStream, trailers: string[]): DataStatus;
  /** The request is over (answered, reset or timed out): release timers and counts. */
  onDestroy?(): void;
}

/** What a filter's instance shares across the requests of one connection manager. */
export interface FilterContext {
  /** The connection manager's `http.<stat_prefix>.` scope. */
  scope: Scope;
  runtime: RuntimeLookup;
  /** The clusters a filter calls its service through (ext_authz, ratelimit). */
  clusters: ClusterLookup;
  /** The logger of a component (`lua`, ...), as `--component-log-level` names it. */
  log(component: string): bunyan;
  /** This proxy's own cluster (`--service-cluster`, else `node.cluster`), for ratelimit's `source_cluster`. */
  localCluster: string;
  /** The listener whose chain holds this connection manager: with the config, what names a process-wide bucket. */
  listenerName: string;
  /** This process's tap filters and the `/tap` sessions attached to them. */
  taps: TapRegistry;
  /** Runs `release` when the connection manager closes (a filter letting go of what it registered). */
  onClose(release: () => void): void;
}

/**
 * Makes each request's filter state; built once per connection manager. Null: the filter sits
 * this request out (a tap with no session attached), costing it nothing.
 */
export type StreamFilterMaker = () => StreamFilter | null;

/** One request's filters from the chain's makers, those sitting it out left out; null for none. */
export function requestFilters(makers: readonly StreamFilterMaker[]): StreamFilter[] | null {
  const out: StreamFilter[] = [];
  for (const make of makers) {
    const filter = make();
    if (filter !== null) out.push(filter);
  }
  return out.length === 0 ? null : out;
}

/**
 * One HTTP filter extension: its names, its config messages and their compile step, and its
 * per-request filter. The registry (registry.ts) lists the factories once; the extension
 * registry, the loader's type names and its schema read them from there, so a filter is its
 * own file or folder plus one line of registry.ts (docs/http-filters.md, "Adding a filter").
 * `compile` is the one compile step shared by `--mode validate` and serving; it refuses
 * unknown fields by name. A filter either fills one of the chain's built-in slots (`install`)
 * or runs per request (`start`). Its `typeAliases` name `perRouteType`'s other names too; a
 * route's `per_filter_config` Struct arrives read by the loader as `perRouteType`, like an `Any`.
 */
export interface HttpFilterFactory<C = unknown> extends ExtensionIdentity {
  /** The field tables `compile` checks against, by message name (docs/bootstrap.md). */
  fieldTables: Record<string, FieldTable>;
  compile(config: JsonObject, path: string, report: Report): C;
  /** Places the compiled config into the chain; absent: the filter runs per request through `start`. */
  install?(chain: FilterChain, config: C, path: string, report: Report): void;
  /**
   * Makes the filter's per-request state, once per connection manager; `name` is its
   * `http_filters` entry's name (a factory with `perRouteByName` reads its overrides by it).
   */
  start?(config: C, ctx: FilterContext, name?: string): StreamFilterMaker;
  /** Compiles a route's or virtual host's override (`per_filter_config` / `typed_per_filter_config`). */
  perRoute?(config: JsonObject, path: string, report: Report): unknown;
  /**
   * Its filters read their overrides by their `http_filters` name too (`stream.perRoute(type,
   * name)`), so a `typed_per_filter_config` key may be that name (the reference's
   * `lua_filter_with_custom_name_1`); without it such a key is refused.
   */
  perRouteByName?: boolean;
}
