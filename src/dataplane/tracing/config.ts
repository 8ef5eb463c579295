import type { Json, JsonObject } from '../../../events/config.js';
import { arrayOf, durationMs, numberOr, objectOf, percentOr } from '../../../reducers/settings/values.js';
import { CONFIG_TYPE, configTypeOf } from '../../bootstrap/extensions.js';
import { acting, checkFields, type FieldTable, notYet } from '../../bootstrap/honoured.js';
import { Report } from '../../bootstrap/report.js';
import { compileFilterGrpcService, type FilterGrpcService } from '../http/filters/grpc-call.js';
import type { RuntimeFraction } from '../http/runtime-fraction.js';

/** A `ZipkinConfig` compiled: where spans go and how ids are made. */
export interface ZipkinSpec {
  kind: 'zipkin';
  collectorCluster: string;
  collectorEndpoint: string;
  /** `trace_id_128bit`: a trace this proxy starts gets a 128-bit id. */
  traceId128: boolean;
  /** `shared_span_context` (default true): an ingress span reuses the caller's span id. */
  sharedSpanContext: boolean;
  /** `collector_endpoint_version`: Zipkin's JSON v1 (`HTTP_JSON_V1`, the v2 default) or v2 (`HTTP_JSON`). */
  encoding: 'json-v1' | 'json-v2';
}

/** An OTLP/HTTP collector (`http_service`): where the protobuf POST goes. */
export interface OtlpHttpCollector {
  cluster: string;
  /** The path of `http_uri.uri` (`/v1/traces`) and its host, the request's authority. */
  path: string;
  authority: string;
  timeoutMs: number;
  /** `request_headers_to_add`, flat, names lowercase. */
  headers: string[];
}

/** An `OpenTelemetryConfig` compiled: the OTLP collector it exports spans to, over gRPC or HTTP. */
export interface OpenTelemetrySpec {
  kind: 'opentelemetry';
  collector: { kind: 'grpc'; service: FilterGrpcService } | ({ kind: 'http' } & OtlpHttpCollector);
  /** The resource's attributes: `service.name` (`service_name`), then the resource detectors'. */
  resource: Array<[string, string]>;
  /** `sampler` `always_on`: every span is sampled, whatever the connection manager or the caller decided. */
  alwaysOn: boolean;
}

/** The collector cluster a tracer reports to, and the field naming it (the bootstrap checks it exists). */
export function tracerCluster(spec: TracerSpec): [string, string] {
  if (spec.kind === 'zipkin') return [spec.collectorCluster, 'collector_cluster'];
  return spec.collector.kind === 'grpc'
    ? [spec.collector.service.cluster, 'grpc_service.envoy_grpc.cluster_name']
    : [spec.collector.cluster, 'http_service.http_uri.cluster'];
}

/** A tracer's config compiled. */
export type TracerSpec = ZipkinSpec | OpenTelemetrySpec;

/** An HCM's `tracing` compiled, the reference's defaults filled in. */
export interface TracingSpec {
  /** `operation_name` EGRESS: spans are client spans and every one is a child. */
  egress: boolean;
  /** The three sampling fractions as the reference evaluates them (out of 10000, runtime keys `tracing.*`). */
  clientSampling: RuntimeFraction;
  randomSampling: RuntimeFraction;
  overallSampling: RuntimeFraction;
  /** `verbose`: the stream's timing events as span annotations. */
  verbose: boolean;
  /** `max_path_tag_length` (default 256): where the `http.url` tag's path is cut. */
  maxPathTagLength: number;
  /** `request_headers_for_tags`: lowercase header names, each a tag when the request has it. */
  requestHeadersForTags: string[];
  /** `provider`; null: the bootstrap's `tracing.http`, or no spans when it has none either. */
  provider: TracerSpec | null;
}

const ZIPKIN_FIELDS: FieldTable = acting(
  'collector_cluster',
  'collector_endpoint',
  'trace_id_128bit',
  'shared_span_context',
  'collector_endpoint_version',
);
const OPENTELEMETRY_FIELDS: FieldTable = {
  ...acting('grpc_service', 'http_service', 'service_name', 'resource_detectors', 'sampler'),
  max_cache_size: notYet(
    'OpenTelemetryConfig.max_cache_size (spans are batched by the runtime keys tracing.opentelemetry.*)',
  ),
};
const OTLP_HTTP_FIELDS: FieldTable = acting('http_uri', 'request_headers_to_add');
const HTTP_TRACER_FIELDS: FieldTable = acting('name', 'typed_config');
const HCM_TRACING_FIELDS: FieldTable = {
  ...acting(
    'operation_name',
    'request_headers_for_tags',
    'client_sampling',
    'random_sampling',
    'overall_sampling',
    'verbose',
    'max_path_tag_length',
    'provider',
  ),
  custom_tags: notYet('tracing custom_tags'),
};
const BOOTSTRAP_TRACING_FIELDS: FieldTable = acting('http');

/** The field tables of this compile step, by the message name its findings use (docs/bootstrap.md lists them). */
export const FIELD_TABLES = {
  Tracing: BOOTSTRAP_TRACING_FIELDS,
  'Tracing.Http': HTTP_TRACER_FIELDS,
  ZipkinConfig: ZIPKIN_FIELDS,
  OpenTelemetryConfig: OPENTELEMETRY_FIELDS,
  'OpenTelemetryConfig.HttpService': OTLP_HTTP_FIELDS,
  'HttpConnectionManager.Tracing': HCM_TRACING_FIELDS,
};

/** `ZipkinConfig`: JSON v1 or v2 over HTTP is what this build sends; protobuf and gRPC are refused by name. */
function compileZipkin(config: JsonObject, path: string, report: Report): ZipkinSpec {
  checkFields(config, path, report, ZIPKIN_FIELDS, 'ZipkinConfig');
  const collectorCluster = typeof config.collector_cluster === 'string' ? config.collector_cluster : '';
  const collectorEndpoint = typeof config.collector_endpoint === 'string' ? config.collector_endpoint : '';
  if (!collectorCluster) report.error(`${path}.collector_cluster`, 'required field missing', 'missing');
  if (!collectorEndpoint) report.error(`${path}.collector_endpoint`, 'required field missing', 'missing');
  // Enum value 0 (HTTP_JSON_V1) is left out of the canonical form: unset means it.
  const version =
    typeof config.collector_endpoint_version === 'string' ? config.collector_endpoint_version : '';
  if (version !== '' && version !== 'HTTP_JSON_V1' && version !== 'HTTP_JSON')
    report.unsupported(
      `${path}.collector_endpoint_version`,
      `${version} is not implemented: set HTTP_JSON (Zipkin JSON v2) or HTTP_JSON_V1`,
    );
  return {
    kind: 'zipkin',
    collectorCluster,
    collectorEndpoint,
    traceId128: config.trace_id_128bit === true,
    sharedSpanContext: config.shared_span_context !== false,
    encoding: version === 'HTTP_JSON' ? 'json-v2' : 'json-v1',
  };
}

/** The resource detectors this build runs, by extension name. */
const RESOURCE_DETECTORS = 'envoy.tracers.opentelemetry.resource_detectors.';
const SAMPLERS = 'envoy.tracers.opentelemetry.samplers.';

/**
 * `OTEL_RESOURCE_ATTRIBUTES` (`key=value,key=value`), as the reference's environment detector
 * reads it when the tracer is made.
 */
function environmentAttributes(path: string, report: Report): Array<[string, string]> {
  const text = process.env.OTEL_RESOURCE_ATTRIBUTES ?? '';
  if (text.trim() === '') {
    report.warn(path, 'OTEL_RESOURCE_ATTRIBUTES is empty: the environment resource detector adds nothing');
    return [];
  }
  return text.split(',').flatMap((pair): Array<[string, string]> => {
    const eq = pair.indexOf('=');
    return eq > 0 ? [[pair.slice(0, eq).trim(), pair.slice(eq + 1).trim()]] : [];
  });
}

/** `resource_detectors`: `environment` and `static_config` act; the others are refused by name. */
function detectedAttributes(list: Json | undefined, path: string, report: Report): Array<[string, string]> {
  return arrayOf(list).flatMap((raw, i) => {
    const at = `${path}[${i}]`;
    const entry = objectOf(raw as JsonObject);
    const name = typeof entry.name === 'string' ? entry.name : '';
    const config = objectOf(entry.typed_config);
    if (name === `${RESOURCE_DETECTORS}environment`) return environmentAttributes(at, report);
    if (name === `${RESOURCE_DETECTORS}static_config`)
      return Object.entries(objectOf(config.attributes)).map(([k, v]): [string, string] => [k, String(v)]);
    report.unsupported(
      `${at}.name`,
      `the resource detector '${name}' is not implemented (${RESOURCE_DETECTORS}environment and static_config are)`,
    );
    return [];
  });
}

/** `sampler`: `always_on` acts; the others are refused by name (the connection manager's sampling decides). */
function compileSampler(raw: JsonObject | undefined, path: string, report: Report): boolean {
  if (raw === undefined) return false;
  const name = typeof raw.name === 'string' ? raw.name : '';
  if (name === `${SAMPLERS}always_on`) return true;
  report.unsupported(
    `${path}.name`,
    `the sampler '${name}' is not implemented (${SAMPLERS}always_on is; without a sampler the connection manager's sampling decides)`,
  );
  return false;
}

/** `http_service`: OTLP/HTTP, protobuf POSTed to `http_uri.uri`'s path on `http_uri.cluster`. */
function compileOtlpHttp(raw: JsonObject, path: string, report: Report): OtlpHttpCollector {
  checkFields(raw, path, report, OTLP_HTTP_FIELDS, 'OpenTelemetryConfig.HttpService');
  const uri = objectOf(raw.http_uri);
  const at = `${path}.http_uri`;
  const cluster = typeof uri.cluster === 'string' ? uri.cluster : '';
  if (cluster === '') report.error(`${at}.cluster`, 'required field missing', 'missing');
  let url: URL | null = null;
  try {
    url = new URL(String(uri.uri ?? ''));
  } catch {
    report.error(`${at}.uri`, `not a URI: ${JSON.stringify(uri.uri ?? '')}`);
  }
  if (uri.timeout === undefined) report.error(`${at}.timeout`, 'required field missing', 'missing');
  const headers = arrayOf(raw.request_headers_to_add).flatMap((option) => {
    const header = objectOf(objectOf(option as JsonObject).header);
    return [String(header.key ?? '').toLowerCase(), String(header.value ?? '')];
  });
  return {
    cluster,
    path: url === null ? '/' : `${url.pathname}${url.search}`,
    authority: url?.host ?? cluster,
    timeoutMs: durationMs(uri.timeout, 0),
    headers,
  };
}

/**
 * `OpenTelemetryConfig`: spans exported to the collector over gRPC (`grpc_service`) or HTTP
 * (`http_service`), with the resource the detectors describe.
 */
function compileOpenTelemetry(config: JsonObject, path: string, report: Report): OpenTelemetrySpec {
  checkFields(config, path, report, OPENTELEMETRY_FIELDS, 'OpenTelemetryConfig');
  const http = config.http_service !== undefined;
  if (http && config.grpc_service !== undefined)
    report.error(path, 'only one of grpc_service and http_service may be set');
  if (!http && config.grpc_service === undefined)
    report.error(
      `${path}.grpc_service`,
      'required field missing (an OTLP collector: grpc_service or http_service)',
      'missing',
    );
  const collector: OpenTelemetrySpec['collector'] = http
    ? { kind: 'http', ...compileOtlpHttp(objectOf(config.http_service), `${path}.http_service`, report) }
    : {
        kind: 'grpc',
        service: compileFilterGrpcService(
          objectOf(config.grpc_service),
          `${path}.grpc_service`,
          report,
          5000,
        ),
      };
  // The reference's default before its resource detectors named the service.
  const serviceName =
    typeof config.service_name === 'string' && config.service_name !== ''
      ? config.service_name
      : 'unknown_service:envoy';
  return {
    kind: 'opentelemetry',
    collector,
    resource: [
      ['service.name', serviceName],
      ...detectedAttributes(config.resource_detectors, `${path}.resource_detectors`, report),
    ],
    alwaysOn: compileSampler(
      config.sampler === undefined ? undefined : objectOf(config.sampler),
      `${path}.sampler`,
      report,
    ),
  };
}

/**
 * A `Tracing.Http` (bootstrap `tracing.http` or an HCM's `tracing.provider`): the loader has
 * resolved every spelling of the name (`envoy.zipkin`, `envoy.tracers.zipkin`, `proxy.*`) or the
 * `@type` alone into `typed_config`, and refused tracers this build lacks (`DynamicOtConfig` ...).
 */
export function compileHttpTracer(raw: JsonObject, path: string, report: Report): TracerSpec | null {
  checkFields(raw, path, report, HTTP_TRACER_FIELDS, 'Tracing.Http');
  const type = configTypeOf(raw);
  if (type === CONFIG_TYPE.zipkin)
    return compileZipkin(objectOf(raw.typed_config), `${path}.typed_config`, report);
  if (type === CONFIG_TYPE.openTelemetry)
    return compileOpenTelemetry(objectOf(raw.typed_config), `${path}.typed_config`, report);
  report.unsupported(
    `${path}.name`,
    'this build has the Zipkin (envoy.tracers.zipkin) and OpenTelemetry (envoy.tracers.opentelemetry) tracers only',
  );
  return null;
}

/** Bootstrap `tracing`: the tracer of every HCM whose `tracing` names no provider; null when none. */
export function compileBootstrapTracing(raw: JsonObject, path: string, report: Report): TracerSpec | null {
  checkFields(raw, path, report, BOOTSTRAP_TRACING_FIELDS, 'Tracing');
  return raw.http === undefined ? null : compileHttpTracer(objectOf(raw.http), `${path}.http`, report);
}

const compiledTracers = new WeakMap<JsonObject, TracerSpec | null>();

/**
 * The bootstrap's tracer, compiled once per bootstrap (kept by its identity): every HTTP
 * connection manager that starts a tracer reads the same value. Its findings were given when
 * the bootstrap was validated.
 */
export function compiledBootstrapTracing(bootstrap: JsonObject | undefined): TracerSpec | null {
  if (!bootstrap) return null;
  const hit = compiledTracers.get(bootstrap);
  if (hit !== undefined) return hit;
  const spec = compileBootstrapTracing(objectOf(bootstrap.tracing), 'tracing', new Report('bootstrap'));
  compiledTracers.set(bootstrap, spec);
  return spec;
}

/** The v2 `type.Percent` (0..100, default 100) as the reference samples it: a fraction of 10000 under `key`. */
function sampling(raw: JsonObject, field: string, key: string): RuntimeFraction {
  // The canonical form leaves out a zero `value`: a Percent that is present but empty is 0.
  const percent = raw[field] === undefined ? 100 : percentOr(raw[field], 0);
  return { key, numerator: Math.round(percent * 100), denominator: 10_000 };
}

/** An HCM's `tracing` message; `path` is its own path. */
export function compileHcmTracing(raw: JsonObject, path: string, report: Report): TracingSpec {
  checkFields(raw, path, report, HCM_TRACING_FIELDS, 'HttpConnectionManager.Tracing');
  for (const field of ['client_sampling', 'random_sampling', 'overall_sampling']) {
    const value = objectOf(raw[field]).value;
    if (
      raw[field] !== undefined &&
      (typeof value === 'number' ? value < 0 || value > 100 : value !== undefined)
    )
      report.error(`${path}.${field}.value`, `a percentage from 0 to 100, got ${JSON.stringify(value)}`);
  }
  return {
    egress: raw.operation_name === 'EGRESS',
    clientSampling: sampling(raw, 'client_sampling', 'tracing.client_enabled'),
    randomSampling: sampling(raw, 'random_sampling', 'tracing.random_sampling'),
    overallSampling: sampling(raw, 'overall_sampling', 'tracing.global_enabled'),
    verbose: raw.verbose === true,
    maxPathTagLength: numberOr(raw.max_path_tag_length, 256),
    requestHeadersForTags: arrayOf(raw.request_headers_for_tags).map((h) => String(h).toLowerCase()),
    provider:
      raw.provider === undefined
        ? null
        : compileHttpTracer(objectOf(raw.provider), `${path}.provider`, report),
  };
}
