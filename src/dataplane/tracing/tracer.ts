/**
 * HTTP tracing of one connection manager: the decision in `x-request-id`, the span from the
 * request's B3 context, the context handed upstream, and the finished span with the
 * reference's tags to the reporter. The exchange calls `start` once per request (before the
 * upstream head is built: the ids are written into the request's own headers, which the head
 * copies) and `finish` once at its end.
 */
import { randomBytes } from 'node:crypto';
import { networkInterfaces } from 'node:os';
import type { Counter, Scope } from '../../stats/store.js';
import { flagsText, type StreamInfo } from '../access-log/stream-info.js';
import { type HttpRequest, removeHeader, setHeader } from '../codec/request.js';
import { type RuntimeLookup, randomDraw } from '../http/runtime-fraction.js';
import type { ClusterLookup } from '../http/types.js';
import type { CompiledRoute } from '../router/table.js';
import { extractContext, extractSampled, firstHeader, injectB3 } from './b3.js';
import type { TracingSpec, ZipkinSpec } from './config.js';
import { ZipkinReporter } from './reporter.js';
import { decideTrace, type TraceReason, traceReason } from './sampling.js';
import { type LocalEndpoint, type Span, startSpan, urlTag, zipkinJson } from './span.js';

/** What the tracer needs from its connection manager and the process. */
export interface TracerDeps {
  clusters: ClusterLookup;
  /** The process's stats root (`tracing.zipkin.*`). */
  stats: { scope(prefix: string): Scope };
  /** The connection manager's scope (`http.<prefix>.`), for `tracing.*`. */
  hcmScope: Scope;
  runtime: RuntimeLookup;
  /** `--service-cluster` or `node.cluster` (the span's service name), `--service-node` or `node.id`, `--service-zone` or `node.locality.zone`. */
  local: { cluster: string; node: string; zone: string };
}

/** A random 64-bit id as 16 hex digits, never all zeros. */
function newId(): string {
  const id = randomBytes(8).toString('hex');
  return id === '0000000000000000' ? '0000000000000001' : id;
}

/** This host's first external address (else loopback), as the reference's local address. */
function localEndpoint(serviceName: string): LocalEndpoint {
  for (const list of Object.values(networkInterfaces()))
    for (const a of list ?? [])
      if (!a.internal && a.family === 'IPv4') return { serviceName, ipv4: a.address, port: 0 };
  return { serviceName, ipv4: '127.0.0.1', port: 0 };
}

export class HttpTracer {
  private readonly reporter: ZipkinReporter;
  private readonly reasons: Record<TraceReason, Counter>;
  private readonly endpoint: LocalEndpoint;

  constructor(
    readonly spec: TracingSpec,
    readonly zipkin: ZipkinSpec,
    private readonly deps: TracerDeps,
  ) {
    this.reporter = new ZipkinReporter(zipkin, deps.clusters, deps.stats, deps.runtime);
    const scope = deps.hcmScope.scope('tracing');
    this.reasons = {
      random_sampling: scope.counter('random_sampling'),
      service_forced: scope.counter('service_forced'),
      client_enabled: scope.counter('client_enabled'),
      not_traceable: scope.counter('not_traceable'),
    };
    this.endpoint = localEndpoint(deps.local.cluster);
  }

  /**
   * Decides, starts the request's span and writes the context the upstream continues into the
   * request's headers; null when the B3 headers are malformed (the request is then not traced,
   * as the reference gives it a null span).
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
    const sampled = extractSampled(h, reason !== 'not_traceable');
    const caller = extractContext(h, sampled);
    if (caller === 'invalid') return null;
    const options = { ...this.zipkin, egress: this.spec.egress };
    const span = startSpan(caller, sampled, options, Date.now() * 1000, newId);
    injectB3(h, span);
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
    const annotations: Array<{ timestamp: number; value: string }> = [];
    if (spec.verbose) {
      const at = (t: number) => span.timestampUs + Math.round((t - info.startedAt) * 1000);
      if (info.firstUpstreamByteAt > 0)
        annotations.push({
          timestamp: at(info.firstUpstreamByteAt),
          value: 'first_upstream_rx_byte_received',
        });
      annotations.push({ timestamp: at(info.endedAt), value: 'last_downstream_tx_byte_sent' });
    }
    this.reporter.report(
      zipkinJson(span, name, durationUs, this.endpoint, tags, this.zipkin.sharedSpanContext, annotations),
    );
  }

  /** Sends what waits and waits for the reports in flight (the connection manager is closing). */
  close(): Promise<void> {
    return this.reporter.close();
  }
}

/** One request's span, from `start` to `finish`. */
export class TracedRequest {
  constructor(
    private readonly tracer: HttpTracer,
    readonly span: Span,
    /** The operation an ingress request's `x-proxy-decorator-operation` named; null for the route's. */
    readonly operation: string | null,
  ) {}

  /** The request is over: `info` is final, `route` the one it took (its decorator names the span). */
  finish(info: StreamInfo, route: CompiledRoute | null): void {
    this.tracer.report(this, info, route);
  }
}
