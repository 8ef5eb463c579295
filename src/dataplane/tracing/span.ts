/**
 * The proxy's span of one request, as the reference's Zipkin tracer builds it, and its Zipkin
 * JSON v2 form. Pure: ids and clocks come in as arguments.
 */
import type { SpanContext } from './b3.js';

/** One span being recorded: its place in the trace and when it started. */
export interface Span extends SpanContext {
  /** SERVER for an ingress span (`sr`), CLIENT for an egress one or a child on ingress without shared context (`cs`). */
  kind: 'SERVER' | 'CLIENT';
  /** Wall-clock start in microseconds since the epoch. */
  timestampUs: number;
}

/** How the tracer makes spans (from `TracingSpec` and `ZipkinSpec`). */
export interface SpanOptions {
  egress: boolean;
  sharedSpanContext: boolean;
  traceId128: boolean;
}

/**
 * The request's span. Without a caller's context it is a root (trace id = span id, plus a high
 * half with `trace_id_128bit`). With one, an egress span, or any span without
 * `shared_span_context`, is a new child of the caller's span (a client span, as the reference
 * annotates it); an ingress span with shared context is the caller's span itself, seen from
 * the server side. `newId` makes a random 64-bit id (16 hex digits).
 */
export function startSpan(
  caller: SpanContext | null,
  sampled: boolean,
  options: SpanOptions,
  timestampUs: number,
  newId: () => string,
): Span {
  if (caller === null) {
    const id = newId();
    return {
      traceId: options.traceId128 ? newId() + id : id,
      spanId: id,
      parentId: '',
      sampled,
      kind: options.egress ? 'CLIENT' : 'SERVER',
      timestampUs,
    };
  }
  if (options.egress || !options.sharedSpanContext)
    return {
      traceId: caller.traceId,
      spanId: newId(),
      parentId: caller.spanId,
      sampled,
      kind: 'CLIENT',
      timestampUs,
    };
  return { ...caller, sampled, kind: 'SERVER', timestampUs };
}

/** Where the span was recorded: the local cluster's name and this host's address. */
export interface LocalEndpoint {
  serviceName: string;
  ipv4?: string;
  ipv6?: string;
  port: number;
}

/** One span as Zipkin's v2 JSON API takes it (`POST /api/v2/spans` with a list of these). */
export interface ZipkinSpanJson {
  traceId: string;
  parentId?: string;
  id: string;
  name?: string;
  kind: 'SERVER' | 'CLIENT';
  timestamp: number;
  duration: number;
  localEndpoint: LocalEndpoint;
  tags: Record<string, string>;
  annotations?: Array<{ timestamp: number; value: string }>;
  /** Set on a server span when the proxy shares its caller's span (`shared_span_context`). */
  shared?: true;
}

/** The finished span's JSON v2 form. */
export function zipkinJson(
  span: Span,
  name: string,
  durationUs: number,
  endpoint: LocalEndpoint,
  tags: Record<string, string>,
  sharedSpanContext: boolean,
  annotations: Array<{ timestamp: number; value: string }>,
): ZipkinSpanJson {
  const out: ZipkinSpanJson = {
    traceId: span.traceId,
    id: span.spanId,
    kind: span.kind,
    timestamp: span.timestampUs,
    duration: Math.max(1, durationUs),
    localEndpoint: endpoint,
    tags,
  };
  if (span.parentId) out.parentId = span.parentId;
  if (name) out.name = name;
  // As the reference: every server span is marked shared when the context is shared.
  if (span.kind === 'SERVER' && sharedSpanContext) out.shared = true;
  if (annotations.length > 0) out.annotations = annotations;
  return out;
}

/** An endpoint of Zipkin's v1 model: an IPv4 address as a dotted string, as the v2 one. */
interface EndpointV1 {
  serviceName: string;
  ipv4?: string;
  ipv6?: string;
  port: number;
}

/** One span as Zipkin's v1 JSON API takes it (`POST /api/v1/spans`), the reference's `HTTP_JSON_V1`. */
export interface ZipkinSpanJsonV1 {
  traceId: string;
  parentId?: string;
  id: string;
  name: string;
  timestamp: number;
  duration: number;
  annotations: Array<{ timestamp: number; value: string; endpoint: EndpointV1 }>;
  binaryAnnotations: Array<{ key: string; value: string; endpoint: EndpointV1 }>;
}

/**
 * A finished span in the v1 model: the kind becomes its core annotations (`sr`/`ss` for a
 * server span, `cs`/`cr` for a client one) at its start and end, the tags binary annotations,
 * each with the local endpoint, as the reference's v1 serializer writes them.
 */
export function zipkinV1(span: ZipkinSpanJson): ZipkinSpanJsonV1 {
  const endpoint: EndpointV1 = { ...span.localEndpoint };
  const [start, end] = span.kind === 'SERVER' ? ['sr', 'ss'] : ['cs', 'cr'];
  const out: ZipkinSpanJsonV1 = {
    traceId: span.traceId,
    id: span.id,
    name: span.name ?? '',
    timestamp: span.timestamp,
    duration: span.duration,
    annotations: [
      { timestamp: span.timestamp, value: start, endpoint },
      ...(span.annotations ?? []).map((a) => ({ ...a, endpoint })),
      { timestamp: span.timestamp + span.duration, value: end, endpoint },
    ],
    binaryAnnotations: Object.entries(span.tags).map(([key, value]) => ({ key, value, endpoint })),
  };
  if (span.parentId) out.parentId = span.parentId;
  return out;
}

/** `scheme://host/path` with the path cut at `maxPathLength`, as the reference's `http.url` tag. */
export function urlTag(scheme: string, authority: string, path: string, maxPathLength: number): string {
  return `${scheme}://${authority}${path.length > maxPathLength ? path.slice(0, maxPathLength) : path}`;
}
