import type { JsonObject } from '../../../../../events/config.js';
import { numberOr, objectOf, stringsOf } from '../../../../../reducers/settings/values.js';
import { acting, checkFields, type FieldTable, notYet } from '../../../../bootstrap/honoured.js';
import type { Report } from '../../../../bootstrap/report.js';
import { type CompressionLibrary, compileLibrary } from '../../compression/libraries.js';
import { compileFeatureFlag, type FeatureFlag } from '../../runtime-fraction.js';

/**
 * The filter's messages, read under the v2 name the reference gave the filter before v3, with
 * v3's fields at v3's numbers (v3's deprecated top-level fields are the v2 ones).
 */
export const COMPRESSOR_PROTO = `
syntax = "proto3";
package envoy.config.filter.http.compressor.v2;
message Compressor {
  message CommonDirectionConfig {
    .envoy.api.v2.core.RuntimeFeatureFlag enabled = 1;
    .google.protobuf.UInt32Value min_content_length = 2;
    repeated string content_type = 3;
  }
  message RequestDirectionConfig {
    CommonDirectionConfig common_config = 1;
  }
  message ResponseDirectionConfig {
    CommonDirectionConfig common_config = 1;
    bool disable_on_etag_header = 2;
    bool remove_accept_encoding_header = 3;
    repeated uint32 uncompressible_response_codes = 4;
    bool status_header_enabled = 5;
  }
  .google.protobuf.UInt32Value content_length = 1 [deprecated = true];
  repeated string content_type = 2 [deprecated = true];
  bool disable_on_etag_header = 3 [deprecated = true];
  bool remove_accept_encoding_header = 4 [deprecated = true];
  .envoy.api.v2.core.RuntimeFeatureFlag runtime_enabled = 5 [deprecated = true];
  .envoy.api.v2.core.TypedExtensionConfig compressor_library = 6;
  RequestDirectionConfig request_direction_config = 7;
  ResponseDirectionConfig response_direction_config = 8;
  bool choose_first = 9;
}
message ResponseDirectionOverrides {
  .google.protobuf.BoolValue remove_accept_encoding_header = 1;
}
message CompressorOverrides {
  ResponseDirectionOverrides response_direction_config = 1;
  .envoy.api.v2.core.TypedExtensionConfig compressor_library = 2;
}
message CompressorPerRoute {
  oneof override {
    bool disabled = 1;
    CompressorOverrides overrides = 2;
  }
}
`;

/** The reference's default content types: compressible text, scripts, JSON, XML, SVG, gRPC-Web. */
const DEFAULT_CONTENT_TYPES = [
  'text/html',
  'text/plain',
  'text/css',
  'application/javascript',
  'application/x-javascript',
  'text/javascript',
  'text/x-javascript',
  'text/ecmascript',
  'text/js',
  'text/jscript',
  'text/x-js',
  'application/ecmascript',
  'application/x-json',
  'application/xml',
  'application/json',
  'image/svg+xml',
  'text/xml',
  'application/xhtml+xml',
  'application/grpc-web',
  'application/grpc-web+proto',
];

/** The smallest body compressed when the config names no other. */
const DEFAULT_MIN_LENGTH = 30;

/** One direction's rules: whether it is on, and which bodies it compresses. */
export interface DirectionRules {
  /** Null: on (no flag). */
  enabled: FeatureFlag | null;
  /** A body with a declared length below this is left alone. */
  minLength: number;
  /** Lowercase media types (no parameters) compressed. */
  contentTypes: ReadonlySet<string>;
}

export interface ResponseRules extends DirectionRules {
  disableOnEtag: boolean;
  removeAcceptEncoding: boolean;
  uncompressibleStatuses: ReadonlySet<number>;
  /** Set from `response_direction_config` (the common stats then sit under `response.`). */
  fromDirectionConfig: boolean;
}

/** A compiled `Compressor`. */
export interface CompressorConfig {
  library: CompressionLibrary | null;
  /** Null: requests are not compressed (the reference's default). */
  request: DirectionRules | null;
  response: ResponseRules;
  chooseFirst: boolean;
}

/** A compiled `CompressorPerRoute`: what a route or virtual host changes of the response side. */
export interface CompressorPerRoute {
  /** False: `disabled`; true: `overrides.response_direction_config` set (compression on); null: unchanged. */
  responseEnabled: boolean | null;
  removeAcceptEncoding: boolean | null;
}

const COMMON_FIELDS: FieldTable = acting('enabled', 'min_content_length', 'content_type');

export const COMPRESSOR_FIELD_TABLES: Record<string, FieldTable> = {
  Compressor: {
    ...acting('content_length', 'content_type', 'disable_on_etag_header', 'remove_accept_encoding_header'),
    ...acting('runtime_enabled', 'compressor_library', 'request_direction_config'),
    ...acting('response_direction_config', 'choose_first'),
  },
  'Compressor.CommonDirectionConfig': COMMON_FIELDS,
  'Compressor.RequestDirectionConfig': acting('common_config'),
  'Compressor.ResponseDirectionConfig': {
    ...acting('common_config', 'disable_on_etag_header', 'remove_accept_encoding_header'),
    uncompressible_response_codes: 'act',
    status_header_enabled: notYet('the compressor status header (status_header_enabled)'),
  },
  CompressorPerRoute: acting('disabled', 'overrides'),
  CompressorOverrides: {
    response_direction_config: 'act',
    compressor_library: notYet("a route's own compressor_library"),
  },
  ResponseDirectionOverrides: acting('remove_accept_encoding_header'),
};

const T = COMPRESSOR_FIELD_TABLES;

function compileRules(
  common: JsonObject,
  flag: JsonObject | undefined,
  path: string,
  report: Report,
): DirectionRules {
  const min = numberOr(common.min_content_length ?? common.content_length, 0);
  const types = stringsOf(common.content_type);
  return {
    enabled: flag === undefined ? null : compileFeatureFlag(flag, `${path}.enabled`, report),
    // As the reference: 0 (or unset) is the default.
    minLength: min > 0 ? min : DEFAULT_MIN_LENGTH,
    contentTypes: new Set((types.length > 0 ? types : DEFAULT_CONTENT_TYPES).map((t) => t.toLowerCase())),
  };
}

function compileCommon(raw: unknown, path: string, report: Report): DirectionRules {
  const common = objectOf(raw as JsonObject);
  checkFields(common, path, report, COMMON_FIELDS, 'Compressor.CommonDirectionConfig');
  return compileRules(
    common,
    common.enabled === undefined ? undefined : objectOf(common.enabled),
    path,
    report,
  );
}

function compileResponse(raw: JsonObject, path: string, report: Report): ResponseRules {
  const direction = raw.response_direction_config;
  if (direction === undefined) {
    // v3's deprecated top-level fields, read only without response_direction_config.
    const rules = compileRules(
      raw,
      raw.runtime_enabled === undefined ? undefined : objectOf(raw.runtime_enabled),
      path,
      report,
    );
    return {
      ...rules,
      disableOnEtag: raw.disable_on_etag_header === true,
      removeAcceptEncoding: raw.remove_accept_encoding_header === true,
      uncompressibleStatuses: new Set(),
      fromDirectionConfig: false,
    };
  }
  const at = `${path}.response_direction_config`;
  const config = objectOf(direction);
  checkFields(
    config,
    at,
    report,
    T['Compressor.ResponseDirectionConfig'] as FieldTable,
    'Compressor.ResponseDirectionConfig',
  );
  const codes = Array.isArray(config.uncompressible_response_codes)
    ? config.uncompressible_response_codes.map(Number)
    : [];
  codes.forEach((code, i) => {
    if (!(Number.isInteger(code) && code >= 200 && code < 600))
      report.error(`${at}.uncompressible_response_codes[${i}]`, `must be in [200, 600), got ${code}`);
  });
  return {
    ...compileCommon(config.common_config, `${at}.common_config`, report),
    disableOnEtag: config.disable_on_etag_header === true,
    removeAcceptEncoding: config.remove_accept_encoding_header === true,
    uncompressibleStatuses: new Set(codes),
    fromDirectionConfig: true,
  };
}

/** Compiles a `Compressor`. */
export function compileCompressor(raw: JsonObject, path: string, report: Report): CompressorConfig {
  checkFields(raw, path, report, T.Compressor as FieldTable, 'Compressor');
  let request: DirectionRules | null = null;
  if (raw.request_direction_config !== undefined) {
    const at = `${path}.request_direction_config`;
    const config = objectOf(raw.request_direction_config);
    checkFields(
      config,
      at,
      report,
      T['Compressor.RequestDirectionConfig'] as FieldTable,
      'Compressor.RequestDirectionConfig',
    );
    request = compileCommon(config.common_config, `${at}.common_config`, report);
  }
  return {
    library: compileLibrary(
      raw.compressor_library === undefined ? undefined : objectOf(raw.compressor_library),
      'compressor',
      `${path}.compressor_library`,
      report,
    ),
    request,
    response: compileResponse(raw, path, report),
    chooseFirst: raw.choose_first === true,
  };
}

/** Compiles a route's or virtual host's `CompressorPerRoute`. */
export function compileCompressorPerRoute(raw: JsonObject, path: string, report: Report): CompressorPerRoute {
  checkFields(raw, path, report, T.CompressorPerRoute as FieldTable, 'CompressorPerRoute');
  if (raw.disabled === true) return { responseEnabled: false, removeAcceptEncoding: null };
  if (raw.overrides === undefined) {
    report.error(path, 'one of disabled (true) or overrides is required', 'missing');
    return { responseEnabled: null, removeAcceptEncoding: null };
  }
  const at = `${path}.overrides`;
  const overrides = objectOf(raw.overrides);
  checkFields(overrides, at, report, T.CompressorOverrides as FieldTable, 'CompressorOverrides');
  const response = overrides.response_direction_config;
  const responseAt = `${at}.response_direction_config`;
  if (response !== undefined)
    checkFields(
      objectOf(response),
      responseAt,
      report,
      T.ResponseDirectionOverrides as FieldTable,
      'ResponseDirectionOverrides',
    );
  const remove = objectOf(response).remove_accept_encoding_header;
  return {
    // The presence of the response overrides turns response compression on, as the reference's.
    responseEnabled: response === undefined ? null : true,
    removeAcceptEncoding: typeof remove === 'boolean' ? remove : null,
  };
}
