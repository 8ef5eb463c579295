import { COMPRESSION_LIBRARY_PROTOS, LIBRARY_FIELD_TABLES } from '../../compression/libraries.js';
import type { HttpFilterFactory } from '../api.js';
import {
  COMPRESSOR_FIELD_TABLES,
  COMPRESSOR_PROTO,
  type CompressorConfig,
  compileCompressor,
  compileCompressorPerRoute,
} from './config.js';
import { CompressorFilter, type CompressorShared, DIRECTION_COUNTERS, RESPONSE_COUNTERS } from './filter.js';

const CONFIG_TYPE = 'envoy.config.filter.http.compressor.v2.Compressor';
const PER_ROUTE_TYPE = 'envoy.config.filter.http.compressor.v2.CompressorPerRoute';

/**
 * `envoy.filters.http.compressor`: compresses responses (and, when asked, requests) with its
 * `compressor_library`, gzip, brotli or zstd (docs/http-filters.md).
 */
export const compressorFactory: HttpFilterFactory<CompressorConfig> = {
  name: 'envoy.filters.http.compressor',
  configType: CONFIG_TYPE,
  typeAliases: {
    'envoy.extensions.filters.http.compressor.v3.Compressor': CONFIG_TYPE,
    'envoy.extensions.filters.http.compressor.v3.CompressorPerRoute': PER_ROUTE_TYPE,
  },
  schema: { source: [COMPRESSOR_PROTO, ...COMPRESSION_LIBRARY_PROTOS] },
  fieldTables: { ...COMPRESSOR_FIELD_TABLES, ...LIBRARY_FIELD_TABLES },
  compile: compileCompressor,
  perRouteType: PER_ROUTE_TYPE,
  perRoute: compileCompressorPerRoute,
  start(config, ctx) {
    const library = config.library as NonNullable<CompressorConfig['library']>;
    // As the reference: `<stat_prefix>compressor.<library name>.<library>.`, the common
    // counters of a response_direction_config under `response.`.
    const root = ctx.scope.scope(`compressor.${library.name}.${library.statPrefix}`);
    const response = config.response.fromDirectionConfig ? root.scope('response') : root;
    const shared: CompressorShared = {
      config,
      encoding: library.encoding,
      request: root.scope('request').counters(DIRECTION_COUNTERS),
      response: response.counters(DIRECTION_COUNTERS),
      responseOnly: root.counters(RESPONSE_COUNTERS),
      runtime: ctx.runtime,
      configType: CONFIG_TYPE,
    };
    return () => new CompressorFilter(shared);
  },
};
