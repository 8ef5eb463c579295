/**
 * The OpenTelemetry tracer's span handling, as the reference's (`envoy.tracers.opentelemetry`):
 * W3C trace context propagation, a SERVER span for an ingress connection manager and a CLIENT
 * one for an egress one, named by the operation, each tag a string attribute, exported over
 * OTLP/gRPC. A caller's `traceparent` gives the trace id, the parent span and the sampled flag
 * (over the proxy's own decision); without one the span starts a trace with a random 128-bit id.
 */
import { randomBytes } from 'node:crypto';
import type { Scope } from '../../stats/store.js';
import type { RuntimeLookup } from '../http/runtime-fraction.js';
import type { ClusterLookup } from '../http/types.js';
import type { OpenTelemetrySpec } from './config.js';
import { OtlpExporter } from './otlp-exporter.js';
import type { TraceProvider, TraceSpan } from './provider.js';
import { extractTraceContext, injectTraceContext } from './traceparent.js';

interface OtelSpan extends TraceSpan {
  traceId: string;
  spanId: string;
  /** '' for a root span. */
  parentId: string;
  traceState: string;
  egress: boolean;
}

/** `bytes` random bytes as hex, never all zeros (an id of zeros names no span). */
function randomHex(bytes: number): string {
  const id = randomBytes(bytes);
  if (id.every((b) => b === 0)) id[bytes - 1] = 1;
  return id.toString('hex');
}

/** Microseconds since the epoch as OTLP's nanoseconds, in decimal (past 2^53). */
const nanos = (us: number) => `${Math.round(us)}000`;

export class OpenTelemetryProvider implements TraceProvider<OtelSpan> {
  private readonly exporter: OtlpExporter;

  constructor(
    private readonly spec: OpenTelemetrySpec,
    clusters: ClusterLookup,
    stats: { scope(prefix: string): Scope },
    runtime: RuntimeLookup,
  ) {
    this.exporter = new OtlpExporter(spec, clusters, stats, runtime);
  }

  begin(headers: string[], traceable: boolean, egress: boolean, timestampUs: number): OtelSpan | null {
    const caller = extractTraceContext(headers);
    if (caller === 'invalid') return null;
    const span: OtelSpan = {
      traceId: caller?.traceId ?? randomHex(16),
      spanId: randomHex(8),
      parentId: caller?.parentId ?? '',
      sampled: this.spec.alwaysOn || (caller?.sampled ?? traceable),
      traceState: caller?.traceState ?? '',
      timestampUs,
      egress,
    };
    injectTraceContext(headers, span);
    return span;
  }

  report(span: OtelSpan, name: string, durationUs: number, tags: Record<string, string>): void {
    this.exporter.add({
      trace_id: Buffer.from(span.traceId, 'hex'),
      span_id: Buffer.from(span.spanId, 'hex'),
      ...(span.parentId === '' ? {} : { parent_span_id: Buffer.from(span.parentId, 'hex') }),
      ...(span.traceState === '' ? {} : { trace_state: span.traceState }),
      name,
      kind: span.egress ? 'SPAN_KIND_CLIENT' : 'SPAN_KIND_SERVER',
      start_time_unix_nano: nanos(span.timestampUs),
      end_time_unix_nano: nanos(span.timestampUs + Math.max(0, durationUs)),
      attributes: Object.entries(tags).map(([key, value]) => ({ key, value: { string_value: value } })),
    });
  }

  close(): Promise<void> {
    return this.exporter.close();
  }
}
