/**
 * The OpenTelemetry tracer's exporter: an effect owned by one connection manager in one process
 * (each data-plane worker exports the spans of its own requests, as each reference worker
 * thread does). Spans wait in a buffer and go as one OTLP `ExportTraceServiceRequest` over
 * gRPC (`TraceService/Export`) to the collector cluster, through this build's own upstream
 * pools, when `tracing.opentelemetry.min_flush_spans` (5) wait, on a timer of
 * `tracing.opentelemetry.flush_interval_ms` (5000 ms), and when the connection manager closes.
 */
import type { Counters, Scope } from '../../stats/store.js';
import { grpcUnary } from '../http/filters/grpc-call.js';
import type { RuntimeLookup } from '../http/runtime-fraction.js';
import type { ClusterLookup } from '../http/types.js';
import type { OpenTelemetrySpec } from './config.js';

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

/** A runtime integer, or the default. */
function runtimeInt(runtime: RuntimeLookup, key: string, fallback: number): number {
  const raw = runtime(key);
  const n = Number(raw);
  return raw !== undefined && Number.isInteger(n) && n >= 0 ? n : fallback;
}

export class OtlpExporter {
  private pending: OtlpSpan[] = [];
  private timer: NodeJS.Timeout | null = null;
  private readonly inFlight = new Set<Promise<void>>();
  private readonly stats: Counters<typeof EXPORTER_COUNTERS>;

  constructor(
    private readonly spec: OpenTelemetrySpec,
    private readonly clusters: ClusterLookup,
    stats: { scope(prefix: string): Scope },
    private readonly runtime: RuntimeLookup,
  ) {
    this.stats = stats.scope('tracing.opentelemetry').counters(EXPORTER_COUNTERS);
    this.arm();
  }

  private arm(): void {
    const ms = runtimeInt(this.runtime, 'tracing.opentelemetry.flush_interval_ms', 5000);
    this.timer = setTimeout(
      () => {
        this.stats.timerFlushed.inc();
        this.flush();
        this.arm();
      },
      Math.max(1, ms),
    );
    this.timer.unref();
  }

  add(span: OtlpSpan): void {
    this.pending.push(span);
    if (this.pending.length >= runtimeInt(this.runtime, 'tracing.opentelemetry.min_flush_spans', 5))
      this.flush();
  }

  /** Exports what waits, if anything: one resource (the service), one scope, the spans. */
  flush(): void {
    if (this.pending.length === 0) return;
    const spans = this.pending;
    this.pending = [];
    this.stats.spansSent.add(spans.length);
    const request = {
      resource_spans: [
        {
          resource: { attributes: [{ key: 'service.name', value: { string_value: this.spec.serviceName } }] },
          scope_spans: [{ spans }],
        },
      ],
    };
    const { cluster, timeoutMs, metadata } = this.spec.collector;
    const sent = new Promise<void>((resolve) => {
      grpcUnary(this.clusters, { cluster, timeoutMs, metadata, ...EXPORT }, request, (result) => {
        if (!result.ok) this.stats.exportsFailed.inc();
        resolve();
      });
    });
    this.inFlight.add(sent);
    void sent.finally(() => this.inFlight.delete(sent));
  }

  /** Stops the timer, exports what waits and waits (at most the call's timeout) for every export in flight. */
  async close(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    this.flush();
    await Promise.all(this.inFlight);
  }
}
