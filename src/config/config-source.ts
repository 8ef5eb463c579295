/**
 * The compile step of `core.ConfigSource` and `core.ApiConfigSource`: where a discovered
 * resource comes from, as a typed value the xDS client serves. `--mode validate` and serve
 * run the same functions.
 */
import type { JsonObject } from '../../events/config.js';
import { type ApiVersion, apiVersion, resourceApiVersion } from '../../reducers/settings/config-source.js';
import { durationMs, numberOr, objectOf } from '../../reducers/settings/values.js';
import { acting, checkFields, type FieldTable, notYet } from '../bootstrap/honoured.js';
import { fieldPath, Report } from '../bootstrap/report.js';
import { compileInitialMetadata, HEADER_VALUE_FIELDS } from './grpc-metadata.js';

export type { ApiVersion };

/** A gRPC management server: a static cluster, spoken to in one transport version. */
export interface GrpcSource {
  api: 'GRPC';
  cluster: string;
  transport: ApiVersion;
  /** `api_type: DELTA_GRPC`: incremental xDS (subscriptions by name, only changes sent). */
  delta: boolean;
  /** `set_node_on_first_message_only`: the node goes in the first request of a stream only. */
  nodeOnFirstOnly: boolean;
  /** `rate_limit_settings`: a token bucket on the stream's requests; null: none. */
  rateLimit: { maxTokens: number; fillRate: number } | null;
  /** `initial_metadata`: headers sent at the start of each stream (a mesh's token), `[name, value]`. */
  metadata: Array<[string, string]>;
}

/** A REST management server: a static cluster polled every `refreshDelayMs` with JSON. */
export interface RestSource {
  api: 'REST';
  cluster: string;
  transport: ApiVersion;
  refreshDelayMs: number;
  requestTimeoutMs: number;
}

/** A compiled `ConfigSource`: its own stream (`grpc`) or the shared ADS stream (`ads`). */
export type ConfigSourceSpec = {
  resourceVersion: ApiVersion;
  initialFetchTimeoutMs: number;
} & (
  | { kind: 'ads' }
  | { kind: 'grpc'; grpc: GrpcSource }
  | { kind: 'rest'; rest: RestSource }
  | { kind: 'path'; path: string; watchedDirectory?: string }
);

/** `initial_fetch_timeout` when unset, as in the reference. */
const DEFAULT_INITIAL_FETCH_TIMEOUT_MS = 15_000;

const CONFIG_SOURCE_FIELDS: FieldTable = {
  ...acting('api_config_source', 'ads', 'path', 'path_config_source', 'initial_fetch_timeout'),
  ...acting('resource_api_version'),
  self: notYet('self config sources'),
};

const PATH_CONFIG_SOURCE_FIELDS: FieldTable = acting('path', 'watched_directory');
const WATCHED_DIRECTORY_FIELDS: FieldTable = acting('path');

const API_CONFIG_SOURCE_FIELDS: FieldTable = {
  ...acting('api_type', 'transport_api_version', 'grpc_services', 'set_node_on_first_message_only'),
  ...acting('cluster_names', 'refresh_delay', 'request_timeout', 'rate_limit_settings'),
};

const RATE_LIMIT_FIELDS: FieldTable = acting('max_tokens', 'fill_rate');

/** The reference's `rate_limit_settings` defaults: a bucket of 100 requests refilled at 10 a second. */
const DEFAULT_MAX_TOKENS = 100;
const DEFAULT_FILL_RATE = 10;

const GRPC_SERVICE_FIELDS: FieldTable = {
  ...acting('envoy_grpc'),
  google_grpc: notYet('google_grpc (use envoy_grpc with a static cluster)'),
  timeout: 'advise',
  initial_metadata: 'act',
};

/** The field tables of this compile step, by the message name its findings use (docs/bootstrap.md lists them). */
export const FIELD_TABLES = {
  ConfigSource: CONFIG_SOURCE_FIELDS,
  ApiConfigSource: API_CONFIG_SOURCE_FIELDS,
  RateLimitSettings: RATE_LIMIT_FIELDS,
  GrpcService: GRPC_SERVICE_FIELDS,
  'HeaderValue (initial_metadata)': HEADER_VALUE_FIELDS,
};

/**
 * An `ApiConfigSource` (inside a ConfigSource, or `dynamic_resources.ads_config`): gRPC with
 * one `envoy_grpc` service, or REST with one cluster name. Undefined with findings in
 * `report` otherwise.
 */
export function compileApiConfigSource(
  config: JsonObject,
  path: string,
  report: Report,
): GrpcSource | RestSource | undefined {
  checkFields(config, path, report, API_CONFIG_SOURCE_FIELDS, 'ApiConfigSource');
  const apiType = typeof config.api_type === 'string' ? config.api_type : 'UNSUPPORTED_REST_LEGACY';
  const transport = apiVersion(config.transport_api_version);
  const services = Array.isArray(config.grpc_services) ? config.grpc_services : [];
  const names = Array.isArray(config.cluster_names) ? config.cluster_names : [];
  if (apiType === 'REST') {
    if (services.length > 0)
      report.error(fieldPath(path, 'grpc_services'), 'is for api_type GRPC; REST takes cluster_names');
    if (names.length !== 1 || typeof names[0] !== 'string' || names[0] === '') {
      report.error(
        fieldPath(path, 'cluster_names'),
        `api_type REST takes exactly one cluster name (found ${names.length})`,
        names.length === 0 ? 'missing' : 'invalid',
      );
      return undefined;
    }
    return {
      api: 'REST',
      cluster: names[0],
      transport,
      refreshDelayMs: durationMs(config.refresh_delay, 1000),
      requestTimeoutMs: durationMs(config.request_timeout, 1000),
    };
  }
  if (apiType !== 'GRPC' && apiType !== 'DELTA_GRPC') {
    report.unsupported(
      fieldPath(path, 'api_type'),
      `api_type ${apiType} is not implemented (use GRPC, DELTA_GRPC or REST, or ads with dynamic_resources.ads_config)`,
    );
    return undefined;
  }
  if (names.length > 0)
    report.error(fieldPath(path, 'cluster_names'), `is for api_type REST; ${apiType} takes grpc_services`);
  if (services.length !== 1) {
    report.error(
      fieldPath(path, 'grpc_services'),
      `api_type ${apiType} takes exactly one grpc_services entry (found ${services.length})`,
      services.length === 0 ? 'missing' : 'invalid',
    );
    return undefined;
  }
  const servicePath = `${path}.grpc_services[0]`;
  const service = objectOf(services[0]);
  checkFields(service, servicePath, report, GRPC_SERVICE_FIELDS, 'GrpcService');
  const cluster = objectOf(service.envoy_grpc).cluster_name;
  if (service.envoy_grpc !== undefined && (typeof cluster !== 'string' || cluster === '')) {
    report.error(`${servicePath}.envoy_grpc.cluster_name`, 'required field missing', 'missing');
    return undefined;
  }
  const metadata = compileInitialMetadata(
    service.initial_metadata,
    fieldPath(servicePath, 'initial_metadata'),
    report,
  );
  if (typeof cluster !== 'string') return undefined;
  return {
    api: 'GRPC',
    cluster,
    transport,
    delta: apiType === 'DELTA_GRPC',
    nodeOnFirstOnly: config.set_node_on_first_message_only === true,
    rateLimit:
      config.rate_limit_settings === undefined
        ? null
        : compileRateLimit(
            objectOf(config.rate_limit_settings),
            fieldPath(path, 'rate_limit_settings'),
            report,
          ),
    metadata,
  };
}

/** `RateLimitSettings`: the bucket's size and its refill rate per second (above 0). */
function compileRateLimit(
  config: JsonObject,
  path: string,
  report: Report,
): { maxTokens: number; fillRate: number } {
  checkFields(config, path, report, RATE_LIMIT_FIELDS, 'RateLimitSettings');
  const maxTokens = numberOr(config.max_tokens, DEFAULT_MAX_TOKENS);
  const fillRate = numberOr(config.fill_rate, DEFAULT_FILL_RATE);
  if (!(fillRate > 0)) report.error(`${path}.fill_rate`, 'must be greater than 0');
  if (!Number.isInteger(maxTokens) || maxTokens < 1) report.error(`${path}.max_tokens`, 'must be at least 1');
  return { maxTokens, fillRate };
}

/**
 * A `ConfigSource`. `ads` needs `dynamic_resources.ads_config`, which the bootstrap-level
 * step checks (it sees both).
 */
export function compileConfigSource(
  config: JsonObject,
  path: string,
  report: Report,
): ConfigSourceSpec | undefined {
  checkFields(config, path, report, CONFIG_SOURCE_FIELDS, 'ConfigSource');
  const common = {
    resourceVersion: resourceApiVersion(config),
    initialFetchTimeoutMs: durationMs(config.initial_fetch_timeout, DEFAULT_INITIAL_FETCH_TIMEOUT_MS),
  };
  if (config.ads !== undefined) return { ...common, kind: 'ads' };
  if (typeof config.path === 'string') {
    if (!config.path) report.error(fieldPath(path, 'path'), 'must name a file', 'invalid');
    return config.path ? { ...common, kind: 'path', path: config.path } : undefined;
  }
  if (config.path_config_source !== undefined) {
    const source = compilePathConfigSource(
      objectOf(config.path_config_source),
      fieldPath(path, 'path_config_source'),
      report,
    );
    return source && { ...common, ...source };
  }
  if (config.api_config_source !== undefined) {
    const api = compileApiConfigSource(
      objectOf(config.api_config_source),
      fieldPath(path, 'api_config_source'),
      report,
    );
    if (!api) return undefined;
    return api.api === 'GRPC'
      ? { ...common, kind: 'grpc', grpc: api }
      : { ...common, kind: 'rest', rest: api };
  }
  if (config.path === undefined && config.self === undefined)
    report.error(path, 'needs a source: api_config_source, ads, path or path_config_source', 'missing');
  return undefined;
}

/**
 * v3's `PathConfigSource`: the file, and a directory whose changes say the file changed (a
 * Kubernetes ConfigMap volume swaps a `..data` symlink in it, which no event on the file's own
 * name shows).
 */
function compilePathConfigSource(
  config: JsonObject,
  path: string,
  report: Report,
): { kind: 'path'; path: string; watchedDirectory?: string } | undefined {
  checkFields(config, path, report, PATH_CONFIG_SOURCE_FIELDS, 'PathConfigSource');
  const file = typeof config.path === 'string' ? config.path : '';
  if (!file) report.error(fieldPath(path, 'path'), 'must name a file', 'missing');
  if (config.watched_directory === undefined) return file ? { kind: 'path', path: file } : undefined;
  const where = fieldPath(path, 'watched_directory');
  const watched = objectOf(config.watched_directory);
  checkFields(watched, where, report, WATCHED_DIRECTORY_FIELDS, 'WatchedDirectory');
  const directory = typeof watched.path === 'string' ? watched.path : '';
  if (!directory) report.error(fieldPath(where, 'path'), 'must name a directory', 'missing');
  return file && directory ? { kind: 'path', path: file, watchedDirectory: directory } : undefined;
}

const memo = new WeakMap<JsonObject, ConfigSourceSpec | null>();

/**
 * The compiled source of a config already validated at load (or when it was discovered);
 * memoised by identity, as snapshot configs are frozen.
 */
export function configSourceOf(config: JsonObject): ConfigSourceSpec | null {
  let spec = memo.get(config);
  if (spec === undefined) {
    const report = new Report('config source');
    const compiled = compileConfigSource(config, '', report);
    spec = compiled && !report.failed ? compiled : null;
    memo.set(config, spec);
  }
  return spec;
}
