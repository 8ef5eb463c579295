import type { JsonObject } from '../../../../../events/config.js';
import { objectOf } from '../../../../../reducers/settings/values.js';
import { acting, checkFields, type FieldTable } from '../../../../bootstrap/honoured.js';
import type { Report } from '../../../../bootstrap/report.js';
import { type CompressionLibrary, compileLibrary } from '../../compression/libraries.js';
import { compileFeatureFlag, type FeatureFlag } from '../../runtime-fraction.js';

/** The filter's message (v3 only in the reference), under a v2 name as this build reads filters, at v3's numbers. */
export const DECOMPRESSOR_PROTO = `
syntax = "proto3";
package envoy.config.filter.http.decompressor.v2;
message Decompressor {
  message CommonDirectionConfig {
    .envoy.api.v2.core.RuntimeFeatureFlag enabled = 1;
    bool ignore_no_transform_header = 2;
  }
  message RequestDirectionConfig {
    CommonDirectionConfig common_config = 1;
    .google.protobuf.BoolValue advertise_accept_encoding = 2;
  }
  message ResponseDirectionConfig {
    CommonDirectionConfig common_config = 1;
  }
  .envoy.api.v2.core.TypedExtensionConfig decompressor_library = 1;
  RequestDirectionConfig request_direction_config = 2;
  ResponseDirectionConfig response_direction_config = 3;
}
`;

/** One direction: whether it decompresses, and whether `Cache-Control: no-transform` stops it. */
export interface DecompressRules {
  /** Null: on (no flag). */
  enabled: FeatureFlag | null;
  ignoreNoTransform: boolean;
}

/** A compiled `Decompressor`. */
export interface DecompressorConfig {
  library: CompressionLibrary | null;
  request: DecompressRules;
  response: DecompressRules;
  /** Requests say the proxy takes the library's encoding (when responses are decompressed). */
  advertiseAcceptEncoding: boolean;
}

const COMMON_FIELDS: FieldTable = acting('enabled', 'ignore_no_transform_header');

export const DECOMPRESSOR_FIELD_TABLES: Record<string, FieldTable> = {
  Decompressor: acting('decompressor_library', 'request_direction_config', 'response_direction_config'),
  'Decompressor.CommonDirectionConfig': COMMON_FIELDS,
  'Decompressor.RequestDirectionConfig': acting('common_config', 'advertise_accept_encoding'),
  'Decompressor.ResponseDirectionConfig': acting('common_config'),
};

function compileRules(direction: JsonObject, path: string, report: Report): DecompressRules {
  const common = objectOf(direction.common_config);
  const at = `${path}.common_config`;
  checkFields(common, at, report, COMMON_FIELDS, 'Decompressor.CommonDirectionConfig');
  return {
    enabled:
      common.enabled === undefined
        ? null
        : compileFeatureFlag(objectOf(common.enabled), `${at}.enabled`, report),
    ignoreNoTransform: common.ignore_no_transform_header === true,
  };
}

/** Compiles a `Decompressor`: both directions decompress unless their `enabled` says otherwise. */
export function compileDecompressor(raw: JsonObject, path: string, report: Report): DecompressorConfig {
  const T = DECOMPRESSOR_FIELD_TABLES;
  checkFields(raw, path, report, T.Decompressor as FieldTable, 'Decompressor');
  const request = objectOf(raw.request_direction_config);
  const response = objectOf(raw.response_direction_config);
  const requestAt = `${path}.request_direction_config`;
  const responseAt = `${path}.response_direction_config`;
  checkFields(
    request,
    requestAt,
    report,
    T['Decompressor.RequestDirectionConfig'] as FieldTable,
    'Decompressor.RequestDirectionConfig',
  );
  checkFields(
    response,
    responseAt,
    report,
    T['Decompressor.ResponseDirectionConfig'] as FieldTable,
    'Decompressor.ResponseDirectionConfig',
  );
  return {
    library: compileLibrary(
      raw.decompressor_library === undefined ? undefined : objectOf(raw.decompressor_library),
      'decompressor',
      `${path}.decompressor_library`,
      report,
    ),
    request: compileRules(request, requestAt, report),
    response: compileRules(response, responseAt, report),
    advertiseAcceptEncoding: request.advertise_accept_encoding !== false,
  };
}
