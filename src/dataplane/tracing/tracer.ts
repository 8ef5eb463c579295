/**
 * HTTP tracing of one connection manager: the decision in `x-request-id`, the span from the
 * caller's context, the context handed upstream, and the finished span with the reference's
 * tags, through its tracer's provider (Zipkin with B3, OpenTelemetry with W3C trace context). The exchange calls `start` once per request (before the
 * upstream head is built: the ids are written into the request's own headers, which the head
 * copies) and `finish` once at its end.
 */
import type { Counter, Scope } from '../../stats/store.js';
import { flagsText, type StreamInfo } from '../access-log/stream-info.js';
import { type HttpRequest, removeHeader, setHeader } from '../codec/request.js';
import { type RuntimeLookup, randomDraw } from '../http/runtime-fraction.js';
import type { ClusterLookup } from '../http/types.js';
import type { CompiledRoute } from '../router/table.js';
import { firstHeader } from './b3.js';
import type { TracerSpec, TracingSpec } from './config.js';
import { OpenTelemetryProvider } from './otel-provider.js';
import type { SpanAnnotation, TraceProvider, TraceSpan } from './provider.js';
import { decideTrace, type TraceReason, traceReason } from './sampling.js';
import { urlTag } from './span.js';
import { ZipkinProvider } from './zipkin-provider.js';

/** What the tracer needs from its connection manager and the process. */
export interface TracerDeps {
  clusters: ClusterLookup;
  /** The process's stats root (`tracing.zipkin.*`, `tracing.opentelemetry.*`). */
  stats: { scope(prefix: string): Scope };
  /** The connection manager's scope (`http.<prefix>.`), for `tracing.*`. */
  hcmScope: Scope;
  runtime: RuntimeLookup;
  /** `--service-cluster` or `node.cluster` (the span's service name), `--service-node` or `node.id`, `--service-zone` or `node.locality.zone`. */
  local: { cluster: string; node: string; zone: string };
}

export class HttpTracer {
  private readonly provider: TraceProvider;
  private readonly reasons: Record<TraceReason, Counter>;

  constructor(
    readonly spec: TracingSpec,
    tracer: TracerSpec,
    private readonly deps: TracerDeps,
  ) {
    this.provider =
      tracer.kind === 'zipkin'
        ? new ZipkinProvider(tracer, deps.clusters, deps.stats, deps.runtime, deps.local.cluster)
        : new OpenTelemetryProvider(tracer, deps.clusters, deps.stats, deps.runtime);
    const scope = deps.hcmScope.scope('tracing');
    this.reasons = {
      random_sampling: scope.counter('random_sampling'),
      service_forced: scope.counter('service_forced'),
      client_enabled: scope.counter('client_enabled'),
      not_traceable: scope.counter('not_traceable'),
    };
  }

  /**
   * Decides, starts the request's span and writes the context the upstream continues into the
   * request's headers; null when the caller's context is malformed (the request is then not
   * traced, as the reference gives it a null span).
   */
  start(req: HttpRequest): TracedRequest | null {
    const h = req.headers;
    // The edge step (`applyEdge`) ran first: it made the id if `generate_request_id` asked for one.
    let rid = firstHeader(h, 'x-request-id');
    if (rid !== undefined) {
      const hints = {
        clientTraceId: firstHeader(h, 'x-client-trace-id') !== undefined,
        forceTrace: firstHeader(h, 'x-proxy-force-trace') !== undefined,
      };
      const decided = decideTrace(rid, hints, this.spec, this.deps.runtime, randomDraw());
      if (decided !== rid) setHeader(h, 'x-request-id', decided);
      rid = decided;
    }
    const reason = traceReason(rid);
    this.reasons[reason].inc();
    const span = this.provider.begin(h, reason !== 'not_traceable', this.spec.egress, Date.now() * 1000);
    if (span === null) return null;
    // Ingress: a caller's decorator operation names this span; the header goes no further.
    let operation: string | null = null;
    if (!this.spec.egress) {
      const named = firstHeader(h, 'x-proxy-decorator-operation');
      if (named !== undefined) {
        removeHeader(h, 'x-proxy-decorator-operation');
        if (named) operation = named;
      }
    }
    return new TracedRequest(this, span, operation);
  }

  /** The finished span to the reporter (sampled spans only, health checks never). */
  report(traced: TracedRequest, info: StreamInfo, route: CompiledRoute | null): void {
    const span = traced.span;
    if (!span.sampled || info.healthCheck || info.request === null) return;
    const req = info.request;
    const spec = this.spec;
    const tags: Record<string, string> = {
      component: 'proxy',
      node_id: this.deps.local.node,
      zone: this.deps.local.zone,
    };
    const rid = firstHeader(req.headers, 'x-request-id');
    if (rid !== undefined) tags['guid:x-request-id'] = rid;
    tags['http.url'] = urlTag(req.scheme, req.authority, req.path, spec.maxPathTagLength);
    tags['http.method'] = req.method;
    tags.downstream_cluster = firstHeader(req.headers, 'x-proxy-downstream-service-cluster') ?? '-';
    tags.user_agent = firstHeader(req.headers, 'user-agent') ?? '-';
    tags['http.protocol'] = req.protocol;
    tags['peer.address'] = req.remoteIp.replace(/^::ffff:/, '');
    const clientTraceId = firstHeader(req.headers, 'x-client-trace-id');
    if (clientTraceId !== undefined) tags['guid:x-client-trace-id'] = clientTraceId;
    for (const name of spec.requestHeadersForTags) {
      const value = firstHeader(req.headers, name);
      if (value !== undefined) tags[name] = value;
    }
    tags.request_size = String(info.bytesReceived);
    if (info.upstreamHost) tags.upstream_cluster = info.upstreamCluster;
    tags['http.status_code'] = String(info.responseCode);
    tags.response_size = String(info.bytesSent);
    tags.response_flags = flagsText(info.flags);
    if (info.responseCode === 0 || info.responseCode >= 500) tags.error = 'true';
    const durationUs = Math.round((info.endedAt - info.startedAt) * 1000);
    const name = traced.operation ?? route?.operation ?? req.authority;
    const annotations: SpanAnnotation[] = [];
    if (spec.verbose) {
      const at = (t: number) => span.timestampUs + Math.round((t - info.startedAt) * 1000);
      if (info.firstUpstreamByteAt > 0)
        annotations.push({
          timestamp: at(info.firstUpstreamByteAt),
          value: 'first_upstream_rx_byte_received',
        });
      annotations.push({ timestamp: at(info.endedAt), value: 'last_downstream_tx_byte_sent' });
    }
    this.provider.report(span, name, durationUs, tags, annotations);
  }

  /** Sends what waits and waits for the reports in flight (the connection manager is closing). */
  close(): Promise<void> {
    return this.provider.close();
  }
}

/** One request's span, from `start` to `finish`. */
export class TracedRequest {
  constructor(
    private readonly tracer: HttpTracer,
    readonly span: TraceSpan,
    /** The operation an ingress request's `x-proxy-decorator-operation` named; null for the route's. */
    readonly operation: string | null,
  ) {}

  /** The request is over: `info` is final, `route` the one it took (its decorator names the span). */
  finish(info: StreamInfo, route: CompiledRoute | null): void {
    this.tracer.report(this, info, route);
  }
}
