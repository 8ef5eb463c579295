import type { JsonObject } from '../../../events/config.js';
import { listOf, objectOf } from '../../../reducers/settings/values.js';
import { acting, checkFields, type FieldTable, notYet } from '../../bootstrap/honoured.js';
import { attempt, type Report } from '../../bootstrap/report.js';
import { headerValue } from '../codec/request.js';
import { compileHeaderMatcher } from '../router/matchers.js';
import { FLAG, RESPONSE_FLAGS, type ResponseFlag, type StreamInfo } from './stream-info.js';

/** Runtime values by key, read when a filter needs one (`runtime_filter`, comparisons). */
export type RuntimeLookup = (key: string) => string | undefined;

/** A compiled `AccessLogFilter`: whether one stream is logged. */
export type AccessLogFilter = (info: StreamInfo, runtime: RuntimeLookup) => boolean;

const FILTER_FIELDS: FieldTable = {
  ...acting(
    'status_code_filter',
    'duration_filter',
    'not_health_check_filter',
    'runtime_filter',
    'and_filter',
    'or_filter',
    'header_filter',
    'response_flag_filter',
  ),
  traceable_filter: notYet('tracing (traceable_filter)'),
  grpc_status_filter: notYet('gRPC status filtering'),
  extension_filter: notYet('access log filter extensions'),
};
const COMPARISON_FIELDS: FieldTable = acting('op', 'value');
const RUNTIME_UINT_FIELDS: FieldTable = acting('default_value', 'runtime_key');
const RUNTIME_FILTER_FIELDS: FieldTable = acting(
  'runtime_key',
  'percent_sampled',
  'use_independent_randomness',
);

const DENOMINATOR: Record<string, number> = { HUNDRED: 100, TEN_THOUSAND: 10_000, MILLION: 1_000_000 };

const always: AccessLogFilter = () => true;

/** A runtime value as a non-negative integer, or `fallback` when unset or not a number. */
function runtimeUint(runtime: RuntimeLookup, key: string, fallback: number): number {
  if (!key) return fallback;
  const raw = runtime(key);
  const n = raw === undefined ? Number.NaN : Number(raw.trim());
  return Number.isInteger(n) && n >= 0 ? n : fallback;
}

/** `ComparisonFilter` over a number the stream yields. */
function compileComparison(
  config: JsonObject,
  path: string,
  report: Report,
  measure: (info: StreamInfo) => number,
): AccessLogFilter {
  const cmp = objectOf(config.comparison);
  checkFields(config, path, report, acting('comparison'), 'filter');
  checkFields(cmp, `${path}.comparison`, report, COMPARISON_FIELDS, 'ComparisonFilter');
  const value = objectOf(cmp.value);
  checkFields(value, `${path}.comparison.value`, report, RUNTIME_UINT_FIELDS, 'RuntimeUInt32');
  const op = typeof cmp.op === 'string' ? cmp.op : 'EQ';
  if (op !== 'EQ' && op !== 'GE' && op !== 'LE')
    report.error(`${path}.comparison.op`, `'${op}' is not one of EQ, GE, LE`);
  const fallback = Number(value.default_value ?? 0);
  const key = typeof value.runtime_key === 'string' ? value.runtime_key : '';
  if (value.runtime_key === undefined && value.default_value === undefined)
    report.error(`${path}.comparison.value`, 'needs default_value', 'missing');
  return (info, runtime) => {
    const want = runtimeUint(runtime, key, fallback);
    const have = measure(info);
    return op === 'GE' ? have >= want : op === 'LE' ? have <= want : have === want;
  };
}

/** A stable number in [0, 1e6) for a request, so every log of one request samples alike. */
function requestPoint(info: StreamInfo): number {
  const id = info.request ? headerValue(info.request, 'x-request-id') : undefined;
  if (id === undefined) return Math.floor(Math.random() * 1_000_000);
  let h = 2166136261;
  for (let i = 0; i < id.length; i++) h = Math.imul(h ^ id.charCodeAt(i), 16777619);
  return (h >>> 0) % 1_000_000;
}

function compileRuntimeFilter(config: JsonObject, path: string, report: Report): AccessLogFilter {
  checkFields(config, path, report, RUNTIME_FILTER_FIELDS, 'RuntimeFilter');
  const key = typeof config.runtime_key === 'string' ? config.runtime_key : '';
  if (!key) report.error(`${path}.runtime_key`, 'required field missing', 'missing');
  const percent = objectOf(config.percent_sampled);
  const denominatorName = typeof percent.denominator === 'string' ? percent.denominator : 'HUNDRED';
  const denominator = DENOMINATOR[denominatorName];
  if (denominator === undefined)
    report.error(
      `${path}.percent_sampled.denominator`,
      `'${denominatorName}' is not HUNDRED, TEN_THOUSAND or MILLION`,
    );
  const scale = 1_000_000 / (denominator ?? 100);
  const fallback = Number(percent.numerator ?? 0);
  const independent = config.use_independent_randomness === true;
  return (info, runtime) => {
    const numerator = Math.min(runtimeUint(runtime, key, fallback), denominator ?? 100);
    const point = independent ? Math.floor(Math.random() * 1_000_000) : requestPoint(info);
    return point < numerator * scale;
  };
}

function compileResponseFlagFilter(config: JsonObject, path: string, report: Report): AccessLogFilter {
  checkFields(config, path, report, acting('flags'), 'ResponseFlagFilter');
  const names = Array.isArray(config.flags) ? config.flags : [];
  let mask = 0;
  names.forEach((name, i) => {
    if (typeof name === 'string' && (RESPONSE_FLAGS as readonly string[]).includes(name))
      mask |= FLAG[name as ResponseFlag];
    else
      report.error(
        `${path}.flags[${i}]`,
        `'${String(name)}' is not a response flag (${RESPONSE_FLAGS.join(', ')})`,
      );
  });
  // No flags listed: any flag at all passes.
  return names.length === 0 ? (info) => info.flags !== 0 : (info) => (info.flags & mask) !== 0;
}

function compileCombined(config: JsonObject, path: string, report: Report, all: boolean): AccessLogFilter {
  checkFields(config, path, report, acting('filters'), all ? 'AndFilter' : 'OrFilter');
  const parts = listOf(config.filters).map((f, i) =>
    compileAccessLogFilter(f, `${path}.filters[${i}]`, report),
  );
  if (parts.length < 2) report.error(`${path}.filters`, 'needs at least 2 filters');
  return all ? (info, rt) => parts.every((f) => f(info, rt)) : (info, rt) => parts.some((f) => f(info, rt));
}

/**
 * Compiles one `AccessLogFilter` (exactly one of its filters set); `path` names it in
 * findings. Filters run once per stream, after it ended, on its record.
 */
export function compileAccessLogFilter(config: JsonObject, path: string, report: Report): AccessLogFilter {
  checkFields(config, path, report, FILTER_FIELDS, 'AccessLogFilter');
  const set = Object.keys(config).filter((k) => Object.hasOwn(FILTER_FIELDS, k));
  if (set.length !== 1) {
    report.error(path, `set exactly one filter (${set.length === 0 ? 'none' : set.join(', ')} set)`);
    return always;
  }
  const kind = set[0] as string;
  const at = `${path}.${kind}`;
  const body = objectOf(config[kind]);
  switch (kind) {
    case 'status_code_filter':
      return compileComparison(body, at, report, (info) => info.responseCode);
    case 'duration_filter':
      return compileComparison(body, at, report, (info) => Math.floor(info.endedAt - info.startedAt));
    case 'not_health_check_filter':
      checkFields(body, at, report, {}, 'NotHealthCheckFilter');
      return (info) => !info.healthCheck;
    case 'runtime_filter':
      return compileRuntimeFilter(body, at, report);
    case 'and_filter':
      return compileCombined(body, at, report, true);
    case 'or_filter':
      return compileCombined(body, at, report, false);
    case 'response_flag_filter':
      return compileResponseFlagFilter(body, at, report);
    case 'header_filter': {
      checkFields(body, at, report, acting('header'), 'HeaderFilter');
      const test = attempt(report, `${at}.header`, () =>
        compileHeaderMatcher(objectOf(body.header), `${at}.header`),
      );
      return test ? (info) => info.request !== null && test(info.request) : always;
    }
    default:
      return always;
  }
}
