import { COMPRESSION_LIBRARY_PROTOS, LIBRARY_FIELD_TABLES } from '../../compression/libraries.js';
import type { HttpFilterFactory } from '../api.js';
import {
  compileDecompressor,
  DECOMPRESSOR_FIELD_TABLES,
  DECOMPRESSOR_PROTO,
  type DecompressorConfig,
} from './config.js';
import { DECOMPRESS_COUNTERS, DecompressorFilter, type DecompressorShared } from './filter.js';

const CONFIG_TYPE = 'envoy.config.filter.http.decompressor.v2.Decompressor';

/** Each library's counter of bodies that would not decompress, as the reference names it. */
const LIBRARY_ERROR: Record<string, string> = {
  gzip: 'zlib_data_error',
  brotli: 'brotli_error',
  zstd: 'zstd_generic_error',
};

/**
 * `envoy.filters.http.decompressor`: decompresses request and response bodies encoded with its
 * `decompressor_library` (gzip, brotli or zstd), see docs/http-filters.md.
 */
export const decompressorFactory: HttpFilterFactory<DecompressorConfig> = {
  name: 'envoy.filters.http.decompressor',
  configType: CONFIG_TYPE,
  typeAliases: { 'envoy.extensions.filters.http.decompressor.v3.Decompressor': CONFIG_TYPE },
  schema: { source: [DECOMPRESSOR_PROTO, ...COMPRESSION_LIBRARY_PROTOS] },
  fieldTables: { ...DECOMPRESSOR_FIELD_TABLES, ...LIBRARY_FIELD_TABLES },
  compile: compileDecompressor,
  start(config, ctx) {
    const library = config.library as NonNullable<DecompressorConfig['library']>;
    // As the reference: `<stat_prefix>decompressor.<library name>.<library>.{request,response}.`.
    const root = ctx.scope.scope(`decompressor.${library.name}.${library.statPrefix}`);
    const shared: DecompressorShared = {
      config,
      encoding: library.encoding,
      request: root.scope('request').counters(DECOMPRESS_COUNTERS),
      response: root.scope('response').counters(DECOMPRESS_COUNTERS),
      libraryErrors: root.scope('decompressor_library').counter(LIBRARY_ERROR[library.statPrefix] as string),
      runtime: ctx.runtime,
    };
    return () => new DecompressorFilter(shared);
  },
};
