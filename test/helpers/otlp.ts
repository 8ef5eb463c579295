/**
 * What an OTLP collector receives, decoded from the repository's own copy of OTLP's protos
 * (proto/opentelemetry): the OpenTelemetry tracer's tests run collectors over gRPC and over
 * HTTP that read the same `ExportTraceServiceRequest`.
 */
import { join } from 'node:path';
import protobuf from 'protobufjs';
import { root } from './bootstrap.js';

export interface ExportedSpan {
  trace_id: string;
  span_id: string;
  parent_span_id: string;
  trace_state: string;
  name: string;
  kind: string;
  start_time_unix_nano: string;
  end_time_unix_nano: string;
  attributes: Array<{ key: string; value: { string_value?: string } }>;
}

/** One resource's spans of an export: its attributes (string values) and spans. */
export interface ExportedResource {
  resource: Record<string, string>;
  spans: ExportedSpan[];
}

const protos = new protobuf.Root();
protos.resolvePath = (_origin, target) => join(root, 'proto', target);
protos.loadSync('opentelemetry/proto/collector/trace/v1/trace_service.proto', { keepCase: true });
const REQUEST = protos.lookupType('opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest');
const RESPONSE = protos.lookupType('opentelemetry.proto.collector.trace.v1.ExportTraceServiceResponse');

/** The empty `ExportTraceServiceResponse`: every span accepted. */
export const EXPORT_ACCEPTED: Uint8Array = RESPONSE.encode(RESPONSE.create({})).finish();

/** An `ExportTraceServiceRequest`'s resources and their spans, the ids as hex, as traceparent writes them. */
export function decodeExport(bytes: Uint8Array): ExportedResource[] {
  const request = REQUEST.toObject(REQUEST.decode(bytes), {
    longs: String,
    enums: String,
    bytes: String,
    defaults: true,
    arrays: true,
  }) as {
    resource_spans: Array<{
      resource: { attributes: ExportedSpan['attributes'] };
      scope_spans: Array<{ spans: ExportedSpan[] }>;
    }>;
  };
  return request.resource_spans.map((rs) => ({
    resource: Object.fromEntries(rs.resource.attributes.map((a) => [a.key, a.value.string_value ?? ''])),
    spans: rs.scope_spans.flatMap((ss) =>
      ss.spans.map((span) => {
        // toObject gives bytes as base64.
        for (const id of ['trace_id', 'span_id', 'parent_span_id'] as const)
          span[id] = Buffer.from(span[id], 'base64').toString('hex');
        return span;
      }),
    ),
  }));
}
