import type { Counters } from '../../../../stats/store.js';
import { FLAG } from '../../../access-log/stream-info.js';
import { removeHeader, setHeader } from '../../../codec/request.js';
import { fractionEnabled, randomDraw } from '../../runtime-fraction.js';
import {
  CONTINUE,
  type FilterContext,
  type FilterStatus,
  type FilterStream,
  type HttpFilterFactory,
  STOP_ITERATION,
  STOP_ITERATION_AND_BUFFER,
  type StreamFilter,
} from '../api.js';
import { type ClusterCall, callCluster } from '../cluster-call.js';
import { perClusterStats } from '../cluster-stats.js';
import { grpcUnary } from '../grpc-call.js';
import {
  type CheckBody,
  checkCall,
  checkRequest,
  grpcVerdict,
  httpCheckHead,
  httpVerdict,
  type Verdict,
} from './check.js';
import {
  compileExtAuthz,
  compileExtAuthzPerRoute,
  EXT_AUTHZ_FIELD_TABLES,
  type ExtAuthzConfig,
  type ExtAuthzPerRoute,
} from './config.js';

const CONFIG_TYPE = 'envoy.config.filter.http.ext_authz.v2.ExtAuthz';
const PER_ROUTE_TYPE = 'envoy.config.filter.http.ext_authz.v2.ExtAuthzPerRoute';

/** The filter's counters, under `cluster.<route's cluster>.ext_authz.[<stat_prefix>.]`, as the reference. */
const EXT_AUTHZ_COUNTERS = {
  ok: 'ok',
  denied: 'denied',
  error: 'error',
  disabled: 'disabled',
  failureModeAllowed: 'failure_mode_allowed',
};
type ExtAuthzStats = Counters<typeof EXT_AUTHZ_COUNTERS>;

/** One request's ext_authz: asks the authorizer, holds the request until it answers, then acts. */
class ExtAuthzFilter implements StreamFilter {
  private call: ClusterCall | null = null;
  /** Waiting for the request body before checking (`with_request_body`); null otherwise. */
  private waiting: {
    extensions: Record<string, string>;
    limit: NonNullable<ExtAuthzConfig['withBody']>;
  } | null = null;

  constructor(
    private readonly config: ExtAuthzConfig,
    private readonly ctx: FilterContext,
    private readonly stats: (cluster: string | null) => ExtAuthzStats | null,
  ) {}

  decodeHeaders(stream: FilterStream): FilterStatus {
    const perRoute = stream.perRoute(CONFIG_TYPE) as ExtAuthzPerRoute | undefined;
    if (perRoute?.disabled === true) return CONTINUE;
    const config = this.config;
    if (config.enabled !== null && !fractionEnabled(config.enabled, this.ctx.runtime, randomDraw())) {
      this.stats(stream.routeCluster)?.disabled.inc();
      if (!this.denyAtDisable()) return CONTINUE;
      stream.info.flags |= FLAG.UAEX;
      stream.info.details = 'ext_authz_error';
      stream.sendLocalReply(config.statusOnError, '');
      return STOP_ITERATION;
    }
    const extensions = perRoute?.disabled === false ? perRoute.contextExtensions : {};
    if (
      config.withBody !== null &&
      stream.req.hasBody &&
      !(perRoute?.disabled === false && perRoute.noBody)
    ) {
      // The check waits for the body (decodeData/decodeTrailers), as the reference's `with_request_body`.
      this.waiting = { extensions, limit: config.withBody };
      return STOP_ITERATION;
    }
    this.check(stream, extensions, null);
    return STOP_ITERATION;
  }

  decodeData(stream: FilterStream, chunk: Buffer, end: boolean): FilterStatus {
    const waiting = this.waiting;
    if (waiting === null) return CONTINUE;
    const held = stream.decodingBuffer?.length ?? 0;
    const total = held + chunk.length;
    const { maxBytes, allowPartial } = waiting.limit;
    if (!allowPartial && total > maxBytes) {
      this.waiting = null;
      stream.sendLocalReply(413, 'Payload Too Large');
      return STOP_ITERATION;
    }
    if (end || total >= maxBytes) {
      this.waiting = null;
      const all = held === 0 ? chunk : Buffer.concat([stream.decodingBuffer as Buffer, chunk]);
      const body = all.length > maxBytes ? all.subarray(0, maxBytes) : all;
      this.check(stream, waiting.extensions, { data: body, partial: !end || all.length > maxBytes });
    }
    return STOP_ITERATION_AND_BUFFER;
  }

  decodeTrailers(stream: FilterStream): FilterStatus {
    const waiting = this.waiting;
    if (waiting === null) return CONTINUE;
    this.waiting = null;
    this.check(stream, waiting.extensions, { data: stream.decodingBuffer ?? EMPTY, partial: false });
    return STOP_ITERATION;
  }

  /** Asks the authorizer; the answer continues or answers the request. */
  private check(stream: FilterStream, extensions: Record<string, string>, body: CheckBody | null): void {
    const service = this.config.service;
    const answer = (verdict: Verdict) => {
      this.call = null;
      this.act(stream, verdict);
    };
    if (service.kind === 'grpc') {
      this.call = grpcUnary(
        this.ctx.clusters,
        checkCall(service),
        checkRequest(stream.req, extensions, body, this.config.withBody?.packAsBytes === true),
        (result) => answer(grpcVerdict(result)),
      );
      return;
    }
    const head = httpCheckHead(service, stream.req, body);
    this.call = callCluster(
      this.ctx.clusters,
      {
        cluster: service.cluster,
        method: stream.req.method,
        path: head.path,
        authority: service.authority,
        headers: head.headers,
        body: body?.data ?? EMPTY,
        timeoutMs: service.timeoutMs,
        http2: false,
      },
      (result) => answer(httpVerdict(service, result)),
    );
  }

  onDestroy(): void {
    this.call?.cancel();
    this.call = null;
  }

  private denyAtDisable(): boolean {
    const flag = this.config.denyAtDisable;
    if (flag === null) return false;
    const raw = flag.key === '' ? undefined : this.ctx.runtime(flag.key)?.trim();
    return raw === 'true' ? true : raw === 'false' ? false : flag.byDefault;
  }

  private act(stream: FilterStream, verdict: Verdict): void {
    if (stream.ended) return;
    const stats = this.stats(stream.routeCluster);
    if (verdict.kind === 'ok') {
      stats?.ok.inc();
      const headers = stream.req.headers;
      for (const name of verdict.remove) removeHeader(headers, name);
      for (let i = 0; i < verdict.set.length; i += 2)
        setHeader(headers, verdict.set[i] as string, verdict.set[i + 1] as string);
      headers.push(...verdict.append);
      // As the reference: only when the answer changed the request's headers.
      const changed = verdict.set.length + verdict.append.length + verdict.remove.length > 0;
      if (this.config.clearRouteCache && changed) stream.clearRouteCache();
      stream.continueDecoding();
      return;
    }
    if (verdict.kind === 'denied') {
      stats?.denied.inc();
      stream.info.flags |= FLAG.UAEX;
      stream.info.details = 'ext_authz_denied';
      stream.sendLocalReply(verdict.status, verdict.body, verdict.headers);
      return;
    }
    stats?.error.inc();
    if (this.config.failureModeAllow) {
      stats?.failureModeAllowed.inc();
      stream.continueDecoding();
      return;
    }
    stream.info.flags |= FLAG.UAEX;
    stream.info.details = 'ext_authz_error';
    stream.sendLocalReply(this.config.statusOnError, '');
  }
}

const EMPTY = Buffer.alloc(0);

/** `envoy.filters.http.ext_authz`: asks a gRPC or HTTP authorizer about each request (docs/http-filters.md). */
export const extAuthzFactory: HttpFilterFactory<ExtAuthzConfig> = {
  name: 'envoy.filters.http.ext_authz',
  aliases: ['envoy.ext_authz'],
  configType: CONFIG_TYPE,
  typeAliases: {
    'envoy.extensions.filters.http.ext_authz.v3.ExtAuthz': CONFIG_TYPE,
    'envoy.extensions.filters.http.ext_authz.v3.ExtAuthzPerRoute': PER_ROUTE_TYPE,
  },
  schema: { file: 'envoy/config/filter/http/ext_authz/v2.proto' },
  fieldTables: EXT_AUTHZ_FIELD_TABLES,
  compile: compileExtAuthz,
  perRoute: compileExtAuthzPerRoute,
  perRouteType: PER_ROUTE_TYPE,
  start(config, ctx) {
    const prefix = config.statPrefix === '' ? 'ext_authz' : `ext_authz.${config.statPrefix}`;
    const stats = perClusterStats(ctx.clusters, prefix, (scope) => scope.counters(EXT_AUTHZ_COUNTERS));
    return () => new ExtAuthzFilter(config, ctx, stats);
  },
};
