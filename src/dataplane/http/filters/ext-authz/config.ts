/**
 * The compile step of `envoy.filters.http.ext_authz`: `ExtAuthz` (v2, and v3 read as v2) and
 * `ExtAuthzPerRoute`. Every field acts or is refused by name.
 */
import type { JsonObject } from '../../../../../events/config.js';
import { listOf, objectOf } from '../../../../../reducers/settings/values.js';
import { acting, checkFields, type FieldTable, notYet } from '../../../../bootstrap/honoured.js';
import { serviceRoot } from '../../../../bootstrap/proto-root.js';
import { attempt, type Report } from '../../../../bootstrap/report.js';
import { compileStringMatcher, type StringTest } from '../../../../config/matchers.js';
import { compileRuntimeFraction, type RuntimeFraction } from '../../runtime-fraction.js';
import { durationField } from '../../timeouts.js';
import {
  compileFilterGrpcService,
  FILTER_GRPC_SERVICE_TABLES,
  type FilterGrpcService,
} from '../grpc-call.js';

/** The authorizer behind `grpc_service`: `envoy.service.auth.v2` or `.v3` `Authorization/Check`. */
export interface GrpcAuthorizer extends FilterGrpcService {
  kind: 'grpc';
  /** `/envoy.service.auth.v2.Authorization/Check` or the v3 one, per `transport_api_version`. */
  path: string;
}

/** The authorizer behind `http_service`: the client's request head, re-sent to `server_uri`'s cluster. */
export interface HttpAuthorizer {
  kind: 'http';
  cluster: string;
  /** `server_uri.uri`'s authority (the Host of authorization requests). */
  authority: string;
  pathPrefix: string;
  timeoutMs: number;
  /** Client headers sent besides the ones always sent; null: only those. */
  allowedHeaders: StringTest[] | null;
  /** `headers_to_add`, flat, lowercase names. */
  headersToAdd: string[];
  /** Answer headers copied onto the upstream request (replacing); null: none. */
  upstreamHeaders: StringTest[] | null;
  /** Answer headers appended to the upstream request; null: none. */
  upstreamHeadersToAppend: StringTest[] | null;
  /** Answer headers of a denial passed to the client; null: all of them. */
  clientHeaders: StringTest[] | null;
}

/** A compiled `ExtAuthz`. */
export interface ExtAuthzConfig {
  service: GrpcAuthorizer | HttpAuthorizer;
  failureModeAllow: boolean;
  /** `status_on_error`: the answer when the authorizer cannot be asked (default 403). */
  statusOnError: number;
  /** `filter_enabled`; null: every request is checked. */
  enabled: RuntimeFraction | null;
  /** `deny_at_disable`: a request the filter skips through `filter_enabled` is denied. */
  denyAtDisable: { byDefault: boolean; key: string } | null;
  /** `clear_route_cache`: an allowing answer that changed the request's headers routes it again. */
  clearRouteCache: boolean;
  /** `with_request_body`: the request body (up to `maxBytes`) goes with the check; null: none. */
  withBody: { maxBytes: number; allowPartial: boolean; packAsBytes: boolean } | null;
  /** Stats under `ext_authz.<stat_prefix>.` ('' for `ext_authz.`). */
  statPrefix: string;
}

/** A compiled `ExtAuthzPerRoute`. */
export type ExtAuthzPerRoute =
  | { disabled: true }
  | { disabled: false; contextExtensions: Record<string, string>; noBody: boolean };

/** The reference's default for both services' `timeout`. */
const DEFAULT_TIMEOUT_MS = 200;

const EXT_AUTHZ_FIELDS: FieldTable = {
  ...acting(
    'grpc_service',
    'http_service',
    'transport_api_version',
    'failure_mode_allow',
    'status_on_error',
    'filter_enabled',
    'deny_at_disable',
    'stat_prefix',
    'with_request_body',
    'clear_route_cache',
  ),
  metadata_context_namespaces: notYet('ext_authz metadata_context_namespaces (no dynamic metadata yet)'),
  include_peer_certificate: notYet('ext_authz include_peer_certificate'),
  use_alpha: notYet('ext_authz use_alpha (removed by the reference)'),
};
const HTTP_SERVICE_FIELDS: FieldTable = acting(
  'server_uri',
  'path_prefix',
  'authorization_request',
  'authorization_response',
);
const AUTHORIZATION_RESPONSE_FIELDS: FieldTable = {
  ...acting('allowed_upstream_headers', 'allowed_upstream_headers_to_append', 'allowed_client_headers'),
  allowed_client_headers_on_success: notYet('ext_authz allowed_client_headers_on_success'),
};

/** The field tables of ext_authz, by message name. */
export const EXT_AUTHZ_FIELD_TABLES: Record<string, FieldTable> = {
  ExtAuthz: EXT_AUTHZ_FIELDS,
  ...FILTER_GRPC_SERVICE_TABLES,
  HttpService: HTTP_SERVICE_FIELDS,
  HttpUri: acting('uri', 'cluster', 'timeout'),
  AuthorizationRequest: acting('allowed_headers', 'headers_to_add'),
  AuthorizationResponse: AUTHORIZATION_RESPONSE_FIELDS,
  ListStringMatcher: acting('patterns'),
  HttpStatus: acting('code'),
  RuntimeFeatureFlag: acting('default_value', 'runtime_key'),
  ExtAuthzPerRoute: acting('disabled', 'check_settings'),
  CheckSettings: acting('context_extensions', 'disable_request_body_buffering'),
  BufferSettings: acting('max_request_bytes', 'allow_partial_message', 'pack_as_bytes'),
};

const T = EXT_AUTHZ_FIELD_TABLES as Record<string, FieldTable>;

/** A `type.StatusCode` (its enum name, or a number) as a number; 0 for none. */
export function statusCodeNumber(code: unknown): number {
  if (typeof code === 'number') return code;
  return serviceRoot().lookupEnum('envoy.type.StatusCode').values[String(code)] ?? 0;
}

/** A `type.HttpStatus` as a number; `fallback` when absent or not an error status. */
export function httpStatus(raw: unknown, fallback: number, path: string, report: Report): number {
  if (raw === undefined) return fallback;
  const status = objectOf(raw as JsonObject);
  checkFields(status, path, report, T.HttpStatus!, 'HttpStatus');
  const code = status.code;
  const n = statusCodeNumber(code);
  if (n < 100 || n > 599) {
    report.error(`${path}.code`, `not an HTTP status: ${JSON.stringify(code)}`);
    return fallback;
  }
  return n;
}

/** `ListStringMatcher` patterns; null when the message is absent. */
function stringList(raw: unknown, path: string, report: Report): StringTest[] | null {
  if (raw === undefined) return null;
  const list = objectOf(raw as JsonObject);
  checkFields(list, path, report, T.ListStringMatcher!, 'ListStringMatcher');
  return listOf(list.patterns).flatMap(
    (p, i) => attempt(report, path, () => compileStringMatcher(p, `${path}.patterns[${i}]`)) ?? [],
  );
}

/** A gRPC authorizer (`grpc_service`, `transport_api_version`), shared with the network filter (src/dataplane/network-filters/ext-authz/). */
export function compileGrpc(raw: JsonObject, version: unknown, path: string, report: Report): GrpcAuthorizer {
  // As the reference of its era: AUTO (and no field) is v2.
  const api = version === 'V3' ? 'v3' : 'v2';
  return {
    kind: 'grpc',
    ...compileFilterGrpcService(raw, path, report, DEFAULT_TIMEOUT_MS),
    path: `/envoy.service.auth.${api}.Authorization/Check`,
  };
}

function compileHttp(raw: JsonObject, path: string, report: Report): HttpAuthorizer {
  checkFields(raw, path, report, HTTP_SERVICE_FIELDS, 'HttpService');
  const uri = objectOf(raw.server_uri);
  checkFields(uri, `${path}.server_uri`, report, T.HttpUri!, 'HttpUri');
  const cluster = typeof uri.cluster === 'string' ? uri.cluster : '';
  if (cluster === '') report.error(`${path}.server_uri.cluster`, 'required field missing', 'missing');
  if (typeof uri.uri !== 'string' || uri.uri === '')
    report.error(`${path}.server_uri.uri`, 'required field missing', 'missing');
  if (uri.timeout === undefined)
    report.error(`${path}.server_uri.timeout`, 'required field missing', 'missing');
  const request = objectOf(raw.authorization_request);
  const requestPath = `${path}.authorization_request`;
  checkFields(request, requestPath, report, T.AuthorizationRequest!, 'AuthorizationRequest');
  const response = objectOf(raw.authorization_response);
  const responsePath = `${path}.authorization_response`;
  checkFields(response, responsePath, report, AUTHORIZATION_RESPONSE_FIELDS, 'AuthorizationResponse');
  const headersToAdd = listOf(request.headers_to_add).flatMap((h) => [
    String(h.key ?? '').toLowerCase(),
    String(h.value ?? ''),
  ]);
  return {
    kind: 'http',
    cluster,
    authority: uriAuthority(typeof uri.uri === 'string' ? uri.uri : '', cluster),
    pathPrefix: typeof raw.path_prefix === 'string' ? raw.path_prefix : '',
    timeoutMs: durationField(uri.timeout, DEFAULT_TIMEOUT_MS, `${path}.server_uri.timeout`, report),
    allowedHeaders: stringList(request.allowed_headers, `${requestPath}.allowed_headers`, report),
    headersToAdd,
    upstreamHeaders: stringList(
      response.allowed_upstream_headers,
      `${responsePath}.allowed_upstream_headers`,
      report,
    ),
    upstreamHeadersToAppend: stringList(
      response.allowed_upstream_headers_to_append,
      `${responsePath}.allowed_upstream_headers_to_append`,
      report,
    ),
    clientHeaders: stringList(
      response.allowed_client_headers,
      `${responsePath}.allowed_client_headers`,
      report,
    ),
  };
}

/** The authority of `server_uri.uri` (`http://authz:9002/x` -> `authz:9002`); the cluster name for a bare word. */
function uriAuthority(uri: string, cluster: string): string {
  const m = /^[a-z][a-z0-9+.-]*:\/\/([^/?#]+)/i.exec(uri);
  return m?.[1] ?? (uri !== '' && !uri.includes('/') ? uri : cluster);
}

/** Compiles the filter's `ExtAuthz`. */
export function compileExtAuthz(raw: JsonObject, path: string, report: Report): ExtAuthzConfig {
  checkFields(raw, path, report, EXT_AUTHZ_FIELDS, 'ExtAuthz');
  let service: GrpcAuthorizer | HttpAuthorizer;
  if (raw.http_service !== undefined) {
    service = compileHttp(objectOf(raw.http_service), `${path}.http_service`, report);
  } else {
    if (raw.grpc_service === undefined)
      report.error(path, 'one of grpc_service or http_service is required', 'missing');
    service = compileGrpc(
      objectOf(raw.grpc_service),
      raw.transport_api_version,
      `${path}.grpc_service`,
      report,
    );
  }
  let denyAtDisable: ExtAuthzConfig['denyAtDisable'] = null;
  if (raw.deny_at_disable !== undefined) {
    const flag = objectOf(raw.deny_at_disable);
    checkFields(flag, `${path}.deny_at_disable`, report, T.RuntimeFeatureFlag!, 'RuntimeFeatureFlag');
    denyAtDisable = {
      byDefault: flag.default_value === true,
      key: typeof flag.runtime_key === 'string' ? flag.runtime_key : '',
    };
  }
  return {
    service,
    failureModeAllow: raw.failure_mode_allow === true,
    statusOnError: httpStatus(raw.status_on_error, 403, `${path}.status_on_error`, report),
    enabled:
      raw.filter_enabled === undefined
        ? null
        : compileRuntimeFraction(objectOf(raw.filter_enabled), `${path}.filter_enabled`, report),
    denyAtDisable,
    statPrefix: typeof raw.stat_prefix === 'string' ? raw.stat_prefix : '',
    clearRouteCache: raw.clear_route_cache === true,
    withBody:
      raw.with_request_body === undefined
        ? null
        : compileBufferSettings(objectOf(raw.with_request_body), `${path}.with_request_body`, report),
  };
}

function compileBufferSettings(raw: JsonObject, path: string, report: Report): ExtAuthzConfig['withBody'] {
  checkFields(raw, path, report, T.BufferSettings as FieldTable, 'BufferSettings');
  const maxBytes = Number(raw.max_request_bytes ?? 0);
  if (!Number.isInteger(maxBytes) || maxBytes <= 0)
    report.error(`${path}.max_request_bytes`, 'must be greater than 0', 'missing');
  return {
    maxBytes,
    allowPartial: raw.allow_partial_message === true,
    packAsBytes: raw.pack_as_bytes === true,
  };
}

/** Compiles a route's or virtual host's `ExtAuthzPerRoute`. */
export function compileExtAuthzPerRoute(raw: JsonObject, path: string, report: Report): ExtAuthzPerRoute {
  checkFields(raw, path, report, T.ExtAuthzPerRoute!, 'ExtAuthzPerRoute');
  if (raw.disabled === true) return { disabled: true };
  if (raw.check_settings === undefined) {
    report.error(path, 'one of disabled (true) or check_settings is required', 'missing');
    return { disabled: false, contextExtensions: {}, noBody: false };
  }
  const settings = objectOf(raw.check_settings);
  checkFields(settings, `${path}.check_settings`, report, T.CheckSettings!, 'CheckSettings');
  const extensions = objectOf(settings.context_extensions);
  return {
    disabled: false,
    contextExtensions: Object.fromEntries(Object.entries(extensions).map(([k, v]) => [k, String(v)])),
    noBody: settings.disable_request_body_buffering === true,
  };
}
