/**
 * The reference's tracing decision, carried in `x-request-id`: a version 4 UUID whose version
 * digit (index 14) is rewritten to say whether and why the request is traced (`4` not traced,
 * `9` forced by the service, `a` by the client, `b` sampled). Every hop that sees the id reads
 * the same decision. The sampling draw is the id's first 8 hex digits modulo 10000, so the
 * same request is sampled the same way by every proxy with the same fractions.
 */
import { fractionEnabled, type RuntimeLookup } from '../http/runtime-fraction.js';
import type { TracingSpec } from './config.js';

/** Why a request is traced or not; the names of the HCM's `tracing.*` counters. */
export type TraceReason = 'random_sampling' | 'service_forced' | 'client_enabled' | 'not_traceable';

const STATUS_REASON: Record<string, TraceReason> = {
  '9': 'service_forced',
  a: 'client_enabled',
  b: 'random_sampling',
};

/** The decision an `x-request-id` carries; anything but a 36-character UUID is not traceable. */
export function traceReason(requestId: string | undefined): TraceReason {
  if (requestId === undefined || requestId.length !== 36) return 'not_traceable';
  return STATUS_REASON[requestId[14] as string] ?? 'not_traceable';
}

function withStatus(requestId: string, status: string): string {
  return requestId.slice(0, 14) + status + requestId.slice(15);
}

/** What of the request the decision reads besides its id. */
export interface TraceHints {
  /** `x-client-trace-id` is present. */
  clientTraceId: boolean;
  /** `x-proxy-force-trace` (the reference's `x-envoy-force-trace`) is present. */
  forceTrace: boolean;
}

/**
 * The reference's `mutateTracingRequestHeader`: a request not yet traced becomes client-traced
 * (client sampling, with `x-client-trace-id`), forced, or randomly sampled; then the overall
 * sampling may turn any of it off. Returns the id to forward; an id whose first 8 characters
 * are not hex is left as it is (it is then not traceable). `random` is a uniform integer draw.
 */
export function decideTrace(
  requestId: string,
  hints: TraceHints,
  spec: TracingSpec,
  runtime: RuntimeLookup,
  random: number,
): string {
  const head = requestId.slice(0, 8);
  if (head.length < 8 || !/^[0-9a-fA-F]{8}$/.test(head)) return requestId;
  const draw = Number.parseInt(head, 16) % 10_000;
  let id = requestId;
  if (traceReason(id) === 'not_traceable' && id.length === 36) {
    if (hints.clientTraceId && fractionEnabled(spec.clientSampling, runtime, random))
      id = withStatus(id, 'a');
    else if (hints.forceTrace) id = withStatus(id, '9');
    else if (fractionEnabled(spec.randomSampling, runtime, draw)) id = withStatus(id, 'b');
  }
  if (!fractionEnabled(spec.overallSampling, runtime, draw) && id.length === 36) id = withStatus(id, '4');
  return id;
}
