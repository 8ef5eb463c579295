/**
 * W3C trace context (`traceparent`, `tracestate`) as the reference's OpenTelemetry tracer reads
 * and writes it: `version-traceid-parentid-flags`, 2, 32, 16 and 2 lowercase or uppercase hex
 * digits, neither id all zeros; the sampled flag is bit 0 of the flags. Pure.
 */
import { setHeader } from '../codec/request.js';
import { firstHeader } from './b3.js';

/** The caller's span as its `traceparent` and `tracestate` name it. */
export interface TraceContext {
  /** 32 lowercase hex digits. */
  traceId: string;
  /** The caller's span id, 16 lowercase hex digits. */
  parentId: string;
  sampled: boolean;
  /** `tracestate`, its values joined by `,`; '' when none. */
  traceState: string;
}

const TRACEPARENT = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/i;

/**
 * The caller's context: null when the request has no `traceparent` (a root span is started),
 * 'invalid' when it is malformed (the reference then traces nothing of the request).
 */
export function extractTraceContext(headers: readonly string[]): TraceContext | null | 'invalid' {
  const value = firstHeader(headers, 'traceparent');
  if (value === undefined) return null;
  const m = TRACEPARENT.exec(value);
  if (m === null) return 'invalid';
  const [, version, traceId, parentId, flags] = m as unknown as [string, string, string, string, string];
  // Version ff is forbidden; ids of zeros name no span.
  if (version.toLowerCase() === 'ff' || /^0+$/.test(traceId) || /^0+$/.test(parentId)) return 'invalid';
  const states: string[] = [];
  for (let i = 0; i < headers.length; i += 2)
    if (headers[i] === 'tracestate') states.push(headers[i + 1] as string);
  return {
    traceId: traceId.toLowerCase(),
    parentId: parentId.toLowerCase(),
    sampled: (Number.parseInt(flags, 16) & 1) === 1,
    traceState: states.join(','),
  };
}

/** Writes the context the upstream continues: this proxy's span as the parent, and the trace state. */
export function injectTraceContext(
  headers: string[],
  span: { traceId: string; spanId: string; sampled: boolean; traceState: string },
): void {
  setHeader(headers, 'traceparent', `00-${span.traceId}-${span.spanId}-${span.sampled ? '01' : '00'}`);
  if (span.traceState !== '') setHeader(headers, 'tracestate', span.traceState);
}
