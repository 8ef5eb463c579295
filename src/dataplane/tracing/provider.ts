/**
 * What a tracer (Zipkin, OpenTelemetry) does of one request's span, apart from the connection
 * manager's sampling decision and tags (tracer.ts): it reads the caller's context in its own
 * propagation format, writes the one the upstream continues, and sends finished spans.
 */

/** A span being recorded: whether it is sampled and when it started. */
export interface TraceSpan {
  sampled: boolean;
  /** Wall-clock start in microseconds since the epoch. */
  timestampUs: number;
}

/** A stream event recorded in the span with `verbose`. */
export interface SpanAnnotation {
  timestamp: number;
  value: string;
}

export interface TraceProvider<S extends TraceSpan = TraceSpan> {
  /**
   * Starts the request's span from the caller's context in `headers` and writes the context
   * the upstream continues into them; `traceable` is the proxy's own decision. Null when the
   * caller's context is malformed: the request is not traced, as the reference gives it a null span.
   */
  begin(headers: string[], traceable: boolean, egress: boolean, timestampUs: number): S | null;
  /** A finished sampled span, with its name, duration, tags and annotations. */
  report(
    span: S,
    name: string,
    durationUs: number,
    tags: Record<string, string>,
    annotations: SpanAnnotation[],
  ): void;
  /** Sends what waits and waits for what is in flight (the connection manager is closing). */
  close(): Promise<void>;
}
