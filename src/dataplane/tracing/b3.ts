/**
 * B3 propagation as the reference's Zipkin tracer reads and writes it: the multi-header form
 * (`x-b3-traceid`, `x-b3-spanid`, `x-b3-parentspanid`, `x-b3-sampled`) and the single `b3`
 * header (`traceid-spanid[-sampled[-parentid]]`, or a lone sampling flag), which wins when
 * present. Ids are kept as lowercase hex, 16 digits per 64 bits, as the reference prints them.
 */
import { setHeader } from '../codec/request.js';

/** The caller's span, as the request's headers describe it. */
export interface SpanContext {
  /** 16 or 32 hex digits. */
  traceId: string;
  spanId: string;
  /** '' when the caller named none. */
  parentId: string;
  sampled: boolean;
}

/** The first value of a header (client controlled: the first is as good as any). */
export function firstHeader(headers: readonly string[], name: string): string | undefined {
  for (let i = 0; i < headers.length; i += 2) if (headers[i] === name) return headers[i + 1];
  return undefined;
}

const HEX64 = /^[0-9a-fA-F]{1,16}$/;

/** A 64-bit id as the reference's `atoull(_, 16)` reads it, written back as 16 digits; null when not hex. */
function id64(text: string): string | null {
  return HEX64.test(text) ? text.toLowerCase().padStart(16, '0') : null;
}

const SAMPLING_FLAGS = new Set(['0', '1', 'd']);

/**
 * Whether the request is sampled: the `b3` header's flag, else `x-b3-sampled` (`1` or the old
 * `true`), else the proxy's own decision (`traced`).
 */
export function extractSampled(headers: readonly string[], traced: boolean): boolean {
  const b3 = firstHeader(headers, 'b3');
  if (b3 !== undefined) {
    // The flag's position in each well-formed length (64/128-bit trace id, with a parent id or not).
    const at = ({ 1: 0, 35: 34, 51: 50, 52: 34, 68: 50 } as Record<number, number>)[b3.length];
    if (at === undefined) return traced;
    const flag = b3[at] as string;
    return SAMPLING_FLAGS.has(flag) ? flag !== '0' : traced;
  }
  const sampled = firstHeader(headers, 'x-b3-sampled');
  return sampled === undefined ? traced : sampled === '1' || sampled === 'true';
}

/**
 * The caller's context: null when the request carries none (a root span is started), or
 * 'invalid' for malformed ids, on which the reference traces nothing for the request.
 */
export function extractContext(headers: readonly string[], sampled: boolean): SpanContext | null | 'invalid' {
  const b3 = firstHeader(headers, 'b3');
  if (b3 !== undefined) return singleHeader(b3, sampled);
  const trace = firstHeader(headers, 'x-b3-traceid');
  const span = firstHeader(headers, 'x-b3-spanid');
  if (trace === undefined || span === undefined) return null;
  const traceId = trace.length === 32 ? pair(trace.slice(0, 16), trace.slice(16)) : id64(trace);
  const spanId = id64(span);
  const parent = firstHeader(headers, 'x-b3-parentspanid') ?? '';
  const parentId = parent === '' ? '' : id64(parent);
  if (traceId === null || spanId === null || parentId === null) return 'invalid';
  return { traceId, spanId, parentId, sampled };
}

function pair(high: string, low: string): string | null {
  const h = id64(high);
  const l = id64(low);
  return h === null || l === null ? null : h + l;
}

/** `traceid-spanid[-flag[-parentid]]`, the reference's grammar; a lone flag carries no context. */
function singleHeader(b3: string, sampled: boolean): SpanContext | null | 'invalid' {
  if (b3.length === 1) return SAMPLING_FLAGS.has(b3) ? null : 'invalid';
  const parts = b3.split('-');
  const [trace = '', span = '', flag, parent] = parts;
  if (parts.length > 4 || (trace.length !== 16 && trace.length !== 32) || span.length !== 16)
    return 'invalid';
  if (flag !== undefined && !SAMPLING_FLAGS.has(flag)) return 'invalid';
  if (parent !== undefined && parent.length !== 16) return 'invalid';
  const traceId = trace.length === 32 ? pair(trace.slice(0, 16), trace.slice(16)) : id64(trace);
  const spanId = id64(span);
  const parentId = parent === undefined ? '' : id64(parent);
  if (traceId === null || spanId === null || parentId === null) return 'invalid';
  return { traceId, spanId, parentId, sampled };
}

/** Writes the context the next hop continues: this proxy's span as the caller, replacing what came in. */
export function injectB3(headers: string[], ctx: SpanContext): void {
  setHeader(headers, 'x-b3-traceid', ctx.traceId);
  setHeader(headers, 'x-b3-spanid', ctx.spanId);
  if (ctx.parentId) setHeader(headers, 'x-b3-parentspanid', ctx.parentId);
  setHeader(headers, 'x-b3-sampled', ctx.sampled ? '1' : '0');
}
