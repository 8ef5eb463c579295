import type { JsonObject } from '../../../../../events/config.js';
import { listOf, objectOf } from '../../../../../reducers/settings/values.js';
import { acting, checkFields, type FieldTable, notYet } from '../../../../bootstrap/honoured.js';
import { attempt, type Report } from '../../../../bootstrap/report.js';
import { compileHeaderMatcher, type RequestTest } from '../../../router/matchers.js';
import { durationField } from '../../timeouts.js';

/** A `FractionalPercent` as numerator over denominator. */
export interface Fraction {
  numerator: number;
  denominator: number;
}

/** A compiled `HTTPFault`: what to inject into which requests, and the runtime keys that override it. */
export interface FaultConfig {
  /** The delay in ms, or `'header'` for `header_delay`; null without a delay. */
  delay: { ms: number | 'header'; percent: Fraction } | null;
  /** The status, or `'header'` for `header_abort`; null without an abort. */
  abort: { status: number | 'header'; percent: Fraction } | null;
  /** Only requests routed to this cluster; empty for any. */
  upstreamCluster: string;
  /** Only requests matching every one. */
  headers: RequestTest[];
  /** Only requests whose `x-envoy-downstream-service-node` is one of these; empty for any. */
  downstreamNodes: string[];
  /** At most this many requests held or answered by faults at once; null for no limit. */
  maxActiveFaults: number | null;
  runtime: {
    delayPercent: string;
    abortPercent: string;
    delayDuration: string;
    abortStatus: string;
    maxActiveFaults: string;
  };
}

const HTTP_FAULT_FIELDS: FieldTable = {
  ...acting(
    'delay',
    'abort',
    'upstream_cluster',
    'headers',
    'downstream_nodes',
    'max_active_faults',
    'delay_percent_runtime',
    'abort_percent_runtime',
    'delay_duration_runtime',
    'abort_http_status_runtime',
    'max_active_faults_runtime',
  ),
  response_rate_limit: notYet('the fault filter response_rate_limit'),
  response_rate_limit_percent_runtime: notYet('the fault filter response_rate_limit'),
};
// `type` is the deprecated FIXED, the only kind there is.
const FAULT_DELAY_FIELDS: FieldTable = acting('type', 'fixed_delay', 'header_delay', 'percentage');
const FAULT_ABORT_FIELDS: FieldTable = acting('http_status', 'header_abort', 'percentage');
const FRACTION_FIELDS: FieldTable = acting('numerator', 'denominator');

/** The field tables of the fault filter, by message name. */
export const FAULT_FIELD_TABLES = {
  HTTPFault: HTTP_FAULT_FIELDS,
  FaultDelay: FAULT_DELAY_FIELDS,
  FaultAbort: FAULT_ABORT_FIELDS,
  HeaderDelay: {},
  HeaderAbort: {},
};

const DENOMINATOR: Record<string, number> = { HUNDRED: 100, TEN_THOUSAND: 10_000, MILLION: 1_000_000 };

function compileFraction(raw: unknown, path: string, report: Report): Fraction {
  const f = objectOf(raw as JsonObject);
  checkFields(f, path, report, FRACTION_FIELDS, 'FractionalPercent');
  const name = typeof f.denominator === 'string' ? f.denominator : 'HUNDRED';
  const denominator = DENOMINATOR[name] ?? 100;
  // As the reference: a share above the whole is the whole.
  return { numerator: Math.min(Number(f.numerator ?? 0), denominator), denominator };
}

function compileDelay(raw: JsonObject, path: string, report: Report): FaultConfig['delay'] {
  checkFields(raw, path, report, FAULT_DELAY_FIELDS, 'FaultDelay');
  checkFields(objectOf(raw.header_delay), `${path}.header_delay`, report, {}, 'HeaderDelay');
  const percent = compileFraction(raw.percentage, `${path}.percentage`, report);
  if (raw.header_delay !== undefined) return { ms: 'header', percent };
  if (raw.fixed_delay === undefined) {
    report.error(path, 'one of fixed_delay or header_delay is required', 'missing');
    return null;
  }
  const ms = durationField(raw.fixed_delay, 0, `${path}.fixed_delay`, report);
  return { ms, percent };
}

function compileAbort(raw: JsonObject, path: string, report: Report): FaultConfig['abort'] {
  checkFields(raw, path, report, FAULT_ABORT_FIELDS, 'FaultAbort');
  checkFields(objectOf(raw.header_abort), `${path}.header_abort`, report, {}, 'HeaderAbort');
  const percent = compileFraction(raw.percentage, `${path}.percentage`, report);
  if (raw.header_abort !== undefined) return { status: 'header', percent };
  const status = Number(raw.http_status ?? 0);
  if (!(status >= 200 && status < 600)) {
    report.error(`${path}.http_status`, `must be in [200, 600), got ${String(raw.http_status ?? 'none')}`);
    return null;
  }
  return { status, percent };
}

const text = (value: unknown, fallback: string): string =>
  typeof value === 'string' && value !== '' ? value : fallback;

/** Compiles an `HTTPFault` (the filter's config, or a route's override of it). */
export function compileFault(raw: JsonObject, path: string, report: Report): FaultConfig {
  checkFields(raw, path, report, HTTP_FAULT_FIELDS, 'HTTPFault');
  const max = raw.max_active_faults;
  return {
    delay: raw.delay === undefined ? null : compileDelay(objectOf(raw.delay), `${path}.delay`, report),
    abort: raw.abort === undefined ? null : compileAbort(objectOf(raw.abort), `${path}.abort`, report),
    upstreamCluster: text(raw.upstream_cluster, ''),
    headers: listOf(raw.headers).flatMap(
      (h, i) => attempt(report, path, () => compileHeaderMatcher(h, `${path}.headers[${i}]`)) ?? [],
    ),
    downstreamNodes: Array.isArray(raw.downstream_nodes) ? raw.downstream_nodes.map(String) : [],
    maxActiveFaults: max === undefined || max === null ? null : Number(max),
    runtime: {
      delayPercent: text(raw.delay_percent_runtime, 'fault.http.delay.fixed_delay_percent'),
      abortPercent: text(raw.abort_percent_runtime, 'fault.http.abort.abort_percent'),
      delayDuration: text(raw.delay_duration_runtime, 'fault.http.delay.fixed_duration_ms'),
      abortStatus: text(raw.abort_http_status_runtime, 'fault.http.abort.http_status'),
      maxActiveFaults: text(raw.max_active_faults_runtime, 'fault.http.max_active_faults'),
    },
  };
}
