/** The Zipkin tracer's span handling: B3 propagation, Zipkin spans, the Zipkin reporter. */
import { randomBytes } from 'node:crypto';
import { networkInterfaces } from 'node:os';
import type { Scope } from '../../stats/store.js';
import type { RuntimeLookup } from '../http/runtime-fraction.js';
import type { ClusterLookup } from '../http/types.js';
import { extractContext, extractSampled, injectB3 } from './b3.js';
import type { ZipkinSpec } from './config.js';
import type { SpanAnnotation, TraceProvider } from './provider.js';
import { ZipkinReporter } from './reporter.js';
import { type LocalEndpoint, type Span, startSpan, zipkinJson } from './span.js';

/** A random 64-bit id as 16 hex digits, never all zeros. */
export function newId(): string {
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

export class ZipkinProvider implements TraceProvider<Span> {
  private readonly reporter: ZipkinReporter;
  private readonly endpoint: LocalEndpoint;

  constructor(
    private readonly zipkin: ZipkinSpec,
    clusters: ClusterLookup,
    stats: { scope(prefix: string): Scope },
    runtime: RuntimeLookup,
    serviceName: string,
  ) {
    this.reporter = new ZipkinReporter(zipkin, clusters, stats, runtime);
    this.endpoint = localEndpoint(serviceName);
  }

  begin(headers: string[], traceable: boolean, egress: boolean, timestampUs: number): Span | null {
    const sampled = extractSampled(headers, traceable);
    const caller = extractContext(headers, sampled);
    if (caller === 'invalid') return null;
    const span = startSpan(caller, sampled, { ...this.zipkin, egress }, timestampUs, newId);
    injectB3(headers, span);
    return span;
  }

  report(
    span: Span,
    name: string,
    durationUs: number,
    tags: Record<string, string>,
    annotations: SpanAnnotation[],
  ): void {
    this.reporter.report(
      zipkinJson(span, name, durationUs, this.endpoint, tags, this.zipkin.sharedSpanContext, annotations),
    );
  }

  close(): Promise<void> {
    return this.reporter.close();
  }
}
