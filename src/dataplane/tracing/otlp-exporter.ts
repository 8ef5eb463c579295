/**
 * The OpenTelemetry tracer's exporter: an effect owned by one connection manager in one process
 * (each data-plane worker exports the spans of its own requests, as each reference worker
 * thread does). Spans wait in a buffer and go as one OTLP `ExportTraceServiceRequest` over
 * gRPC (`TraceService/Export`) or HTTP to the collector cluster, through this build's own upstream
 * pools, batched under the runtime keys `tracing.opentelemetry.*` (span-batch.ts).
 */
import type { Counters, Scope } from '../../stats/store.js';
import { serviceMessageType } from '../../bootstrap/proto-root.js';
import { callCluster } from '../http/filters/cluster-call.js';
import { grpcUnary } from '../http/filters/grpc-call.js';
import type { RuntimeLookup } from '../http/runtime-fraction.js';
import type { ClusterLookup } from '../http/types.js';
import type { OpenTelemetrySpec } from './config.js';
import { SpanBatch } from './span-batch.js';

/** The `tracing.opentelemetry.*` counters, shared by name by every exporter of the process. */
const EXPORTER_COUNTERS = {
  spansSent: 'spans_sent',
  timerFlushed: 'timer_flushed',
  exportsFailed: 'exports_failed',
};

const EXPORT = {
  path: '/opentelemetry.proto.collector.trace.v1.TraceService/Export',
  requestType: 'opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest',
  responseType: 'opentelemetry.proto.collector.trace.v1.ExportTraceServiceResponse',
};

/** One span as the OTLP message's plain object (`opentelemetry.proto.trace.v1.Span`). */
export interface OtlpSpan {
  trace_id: Buffer;
  span_id: Buffer;
  parent_span_id?: Buffer;
  trace_state?: string;
  name: string;
  kind: 'SPAN_KIND_SERVER' | 'SPAN_KIND_CLIENT';
  /** Nanoseconds since the epoch, in decimal (past 2^53: protobufjs reads it as a 64-bit integer). */
  start_time_unix_nano: string;
  end_time_unix_nano: string;
  attributes: Array<{ key: string; value: { string_value: string } }>;
}

export class OtlpExporter {
  private readonly batch: SpanBatch<OtlpSpan>;
  private readonly stats: Counters<typeof EXPORTER_COUNTERS>;
  /** The resource's attributes, as OTLP's key-values. */
  private readonly resource: Array<{ key: string; value: { string_value: string } }>;

  constructor(
    private readonly spec: OpenTelemetrySpec,
    private readonly clusters: ClusterLookup,
    stats: { scope(prefix: string): Scope },
    runtime: RuntimeLookup,
  ) {
    this.stats = stats.scope('tracing.opentelemetry').counters(EXPORTER_COUNTERS);
    // A detector's attribute replaces an earlier one of the same key (the OTel resource merge).
    this.resource = [...new Map(spec.resource)].map(([key, value]) => ({
      key,
      value: { string_value: value },
    }));
    this.batch = new SpanBatch(
      runtime,
      'tracing.opentelemetry',
      (spans) => this.export(spans),
      () => this.stats.timerFlushed.inc(),
    );
  }

  add(span: OtlpSpan): void {
    this.batch.add(span);
  }

  /**
   * One export: one resource, one scope, the spans; resolves when it is answered or failed. Over
   * gRPC (`TraceService/Export`), or over HTTP: the same message as protobuf, POSTed (OTLP/HTTP),
   * a 2xx answer accepting it.
   */
  private export(spans: OtlpSpan[]): Promise<void> {
    this.stats.spansSent.add(spans.length);
    const request = {
      resource_spans: [{ resource: { attributes: this.resource }, scope_spans: [{ spans }] }],
    };
    const collector = this.spec.collector;
    return new Promise<void>((resolve) => {
      if (collector.kind === 'grpc') {
        const { cluster, timeoutMs, metadata } = collector.service;
        grpcUnary(this.clusters, { cluster, timeoutMs, metadata, ...EXPORT }, request, (result) => {
          if (!result.ok) this.stats.exportsFailed.inc();
          resolve();
        });
        return;
      }
      const type = serviceMessageType(EXPORT.requestType);
      const body = Buffer.from(type.encode(type.fromObject(request)).finish());
      const { cluster, path, authority, timeoutMs, headers } = collector;
      const call = {
        cluster,
        method: 'POST',
        path,
        authority,
        headers: ['content-type', 'application/x-protobuf', ...headers],
        body,
        timeoutMs,
        http2: false,
      };
      callCluster(this.clusters, call, (result) => {
        if (!result.ok || result.status < 200 || result.status > 299) this.stats.exportsFailed.inc();
        resolve();
      });
    });
  }

  /** Stops the timer, exports what waits and waits (at most the call's timeout) for every export in flight. */
  close(): Promise<void> {
    return this.batch.close();
  }
}
