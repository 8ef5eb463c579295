/**
 * The compression libraries the compressor and decompressor filters name in their
 * `compressor_library` / `decompressor_library` (`envoy.compression.{gzip,brotli,zstd}.
 * {compressor,decompressor}`): their messages, their one compile step each, and what each makes
 * per stream (src/dataplane/http/compression/stream.ts). See docs/http-filters.md.
 */
import { constants } from 'node:zlib';
import type { JsonObject } from '../../../../events/config.js';
import { numberOr, objectOf } from '../../../../reducers/settings/values.js';
import { acting, checkFields, type FieldTable, notYet } from '../../../bootstrap/honoured.js';
import type { Report } from '../../../bootstrap/report.js';
import type { CodecSpec } from './stream.js';

/** The libraries' messages, as the reference names them (v3 only), and the extension config that carries one. */
export const COMPRESSION_LIBRARY_PROTOS = [
  `
syntax = "proto3";
package envoy.api.v2.core;
// v3's envoy.config.core.v3.TypedExtensionConfig: a named extension and its config.
message TypedExtensionConfig {
  string name = 1;
  .google.protobuf.Any typed_config = 2;
}
`,
  `
syntax = "proto3";
package envoy.extensions.compression.gzip.compressor.v3;
message Gzip {
  enum CompressionStrategy { DEFAULT_STRATEGY = 0; FILTERED = 1; HUFFMAN_ONLY = 2; RLE = 3; FIXED = 4; }
  enum CompressionLevel {
    option allow_alias = true;
    DEFAULT_COMPRESSION = 0; BEST_SPEED = 1; COMPRESSION_LEVEL_1 = 1; COMPRESSION_LEVEL_2 = 2;
    COMPRESSION_LEVEL_3 = 3; COMPRESSION_LEVEL_4 = 4; COMPRESSION_LEVEL_5 = 5; COMPRESSION_LEVEL_6 = 6;
    COMPRESSION_LEVEL_7 = 7; COMPRESSION_LEVEL_8 = 8; COMPRESSION_LEVEL_9 = 9; BEST_COMPRESSION = 9;
  }
  .google.protobuf.UInt32Value memory_level = 1;
  CompressionLevel compression_level = 2;
  CompressionStrategy compression_strategy = 3;
  .google.protobuf.UInt32Value window_bits = 4;
  .google.protobuf.UInt32Value chunk_size = 5;
}
`,
  `
syntax = "proto3";
package envoy.extensions.compression.brotli.compressor.v3;
message Brotli {
  enum EncoderMode { DEFAULT = 0; GENERIC = 1; TEXT = 2; FONT = 3; }
  .google.protobuf.UInt32Value quality = 1;
  EncoderMode encoder_mode = 2;
  .google.protobuf.UInt32Value window_bits = 3;
  .google.protobuf.UInt32Value input_block_bits = 4;
  .google.protobuf.UInt32Value chunk_size = 5;
  bool disable_literal_context_modeling = 6;
}
`,
  `
syntax = "proto3";
package envoy.extensions.compression.zstd.compressor.v3;
message Zstd {
  enum Strategy {
    DEFAULT = 0; FAST = 1; DFAST = 2; GREEDY = 3; LAZY = 4; LAZY2 = 5; BTLAZY2 = 6; BTOPT = 7;
    BTULTRA = 8; BTULTRA2 = 9;
  }
  .google.protobuf.UInt32Value compression_level = 1;
  bool enable_checksum = 2;
  Strategy strategy = 3;
  .envoy.api.v2.core.DataSource dictionary = 4;
  .google.protobuf.UInt32Value chunk_size = 5;
}
`,
  `
syntax = "proto3";
package envoy.extensions.compression.gzip.decompressor.v3;
message Gzip {
  .google.protobuf.UInt32Value window_bits = 1;
  .google.protobuf.UInt32Value chunk_size = 2;
  .google.protobuf.UInt32Value max_inflate_ratio = 3;
}
`,
  `
syntax = "proto3";
package envoy.extensions.compression.brotli.decompressor.v3;
message Brotli {
  bool disable_ring_buffer_reallocation = 1;
  .google.protobuf.UInt32Value chunk_size = 2;
}
`,
  `
syntax = "proto3";
package envoy.extensions.compression.zstd.decompressor.v3;
message Zstd {
  repeated .envoy.api.v2.core.DataSource dictionaries = 1;
  .google.protobuf.UInt32Value chunk_size = 2;
}
`,
];

/** A compiled library: the encoding it speaks, its stats prefix, and how to make its codec. */
export interface CompressionLibrary {
  /** The `compressor_library.name` the config gives it (the stats name it). */
  name: string;
  /** `Content-Encoding` token: `gzip`, `br`, `zstd`. */
  encoding: string;
  /** The library's own stats prefix: `gzip`, `brotli`, `zstd`. */
  statPrefix: string;
  codec: CodecSpec;
}

/** One library extension: its names, message, and how its config becomes a codec. */
interface LibraryKind {
  extension: string;
  /** The name its field table and findings use (`GzipCompressor`). */
  message: string;
  encoding: string;
  statPrefix: string;
  fields: FieldTable;
  codec(config: JsonObject, path: string, report: Report): CodecSpec;
}

/** A `UInt32Value` field within [min, max], else `fallback`; out of range is refused by path. */
function bounded(
  config: JsonObject,
  field: string,
  fallback: number,
  [min, max]: [number, number],
  path: string,
  report: Report,
): number {
  const value = numberOr(config[field], fallback);
  if (config[field] !== undefined && !(Number.isInteger(value) && value >= min && value <= max))
    report.error(`${path}.${field}`, `must be an integer in [${min}, ${max}], got ${String(config[field])}`);
  return value;
}

const CHUNK: [number, number] = [4096, 65536];

/** zlib's `level` by the reference's enum name (DEFAULT_COMPRESSION is zlib's own default, 6). */
function gzipLevel(name: unknown): number {
  if (name === 'BEST_SPEED') return 1;
  if (name === 'BEST_COMPRESSION') return 9;
  const level = /^COMPRESSION_LEVEL_(\d)$/.exec(String(name));
  return level ? Number(level[1]) : constants.Z_DEFAULT_COMPRESSION;
}

const GZIP_STRATEGY: Record<string, number> = {
  FILTERED: constants.Z_FILTERED,
  HUFFMAN_ONLY: constants.Z_HUFFMAN_ONLY,
  RLE: constants.Z_RLE,
  FIXED: constants.Z_FIXED,
};

const BROTLI_MODE: Record<string, number> = {
  GENERIC: constants.BROTLI_MODE_GENERIC,
  TEXT: constants.BROTLI_MODE_TEXT,
  FONT: constants.BROTLI_MODE_FONT,
};

const ZSTD_STRATEGY = [
  'DEFAULT',
  'FAST',
  'DFAST',
  'GREEDY',
  'LAZY',
  'LAZY2',
  'BTLAZY2',
  'BTOPT',
  'BTULTRA',
  'BTULTRA2',
];

/** The reference's default bound on how many times a piece may grow when inflated. */
const DEFAULT_MAX_INFLATE_RATIO = 100;

const COMPRESSORS: Record<string, LibraryKind> = {
  'envoy.extensions.compression.gzip.compressor.v3.Gzip': {
    extension: 'envoy.compression.gzip.compressor',
    message: 'GzipCompressor',
    encoding: 'gzip',
    statPrefix: 'gzip',
    fields: acting('memory_level', 'compression_level', 'compression_strategy', 'window_bits', 'chunk_size'),
    codec: (c, path, report) => ({
      kind: 'gzip',
      options: {
        level: gzipLevel(c.compression_level),
        strategy: GZIP_STRATEGY[String(c.compression_strategy)] ?? constants.Z_DEFAULT_STRATEGY,
        // The reference's defaults: a 4 KiB window and memory level 5 (zlib's are 32 KiB and 8).
        memLevel: bounded(c, 'memory_level', 5, [1, 9], path, report),
        windowBits: bounded(c, 'window_bits', 12, [9, 15], path, report),
        chunkSize: bounded(c, 'chunk_size', 4096, CHUNK, path, report),
      },
    }),
  },
  'envoy.extensions.compression.brotli.compressor.v3.Brotli': {
    extension: 'envoy.compression.brotli.compressor',
    message: 'BrotliCompressor',
    encoding: 'br',
    statPrefix: 'brotli',
    fields: acting(
      'quality',
      'encoder_mode',
      'window_bits',
      'input_block_bits',
      'chunk_size',
      'disable_literal_context_modeling',
    ),
    codec: (c, path, report) => {
      const params: Record<number, number> = {
        [constants.BROTLI_PARAM_QUALITY]: bounded(c, 'quality', 3, [0, 11], path, report),
        [constants.BROTLI_PARAM_LGWIN]: bounded(c, 'window_bits', 18, [10, 24], path, report),
        [constants.BROTLI_PARAM_LGBLOCK]: bounded(c, 'input_block_bits', 24, [16, 24], path, report),
      };
      const mode = BROTLI_MODE[String(c.encoder_mode)];
      if (mode !== undefined) params[constants.BROTLI_PARAM_MODE] = mode;
      if (c.disable_literal_context_modeling === true)
        params[constants.BROTLI_PARAM_DISABLE_LITERAL_CONTEXT_MODELING] = 1;
      return {
        kind: 'brotli',
        options: { params, chunkSize: bounded(c, 'chunk_size', 4096, CHUNK, path, report) },
      };
    },
  },
  'envoy.extensions.compression.zstd.compressor.v3.Zstd': {
    extension: 'envoy.compression.zstd.compressor',
    message: 'ZstdCompressor',
    encoding: 'zstd',
    statPrefix: 'zstd',
    fields: {
      ...acting('compression_level', 'enable_checksum', 'strategy', 'chunk_size'),
      dictionary: notYet('the zstd compressor dictionary'),
    },
    codec: (c, path, report) => {
      // 0 means zstd's default level, 3, as the reference's.
      const level = bounded(c, 'compression_level', 3, [0, 22], path, report);
      const params: Record<number, number> = {
        [constants.ZSTD_c_compressionLevel]: level === 0 ? 3 : level,
        [constants.ZSTD_c_checksumFlag]: c.enable_checksum === true ? 1 : 0,
      };
      const strategy = ZSTD_STRATEGY.indexOf(String(c.strategy ?? 'DEFAULT'));
      if (strategy > 0) params[constants.ZSTD_c_strategy] = strategy;
      return {
        kind: 'zstd',
        options: { params, chunkSize: bounded(c, 'chunk_size', 4096, CHUNK, path, report) },
      };
    },
  },
};

const DECOMPRESSORS: Record<string, LibraryKind> = {
  'envoy.extensions.compression.gzip.decompressor.v3.Gzip': {
    extension: 'envoy.compression.gzip.decompressor',
    message: 'GzipDecompressor',
    encoding: 'gzip',
    statPrefix: 'gzip',
    fields: acting('window_bits', 'chunk_size', 'max_inflate_ratio'),
    codec: (c, path, report) => ({
      kind: 'gunzip',
      options: {
        windowBits: bounded(c, 'window_bits', 15, [9, 15], path, report),
        chunkSize: bounded(c, 'chunk_size', 4096, CHUNK, path, report),
      },
      maxInflateRatio: bounded(c, 'max_inflate_ratio', DEFAULT_MAX_INFLATE_RATIO, [1, 10000], path, report),
    }),
  },
  'envoy.extensions.compression.brotli.decompressor.v3.Brotli': {
    extension: 'envoy.compression.brotli.decompressor',
    message: 'BrotliDecompressor',
    encoding: 'br',
    statPrefix: 'brotli',
    fields: acting('disable_ring_buffer_reallocation', 'chunk_size'),
    codec: (c, path, report) => {
      const params: Record<number, number> = {};
      if (c.disable_ring_buffer_reallocation === true)
        params[constants.BROTLI_DECODER_PARAM_DISABLE_RING_BUFFER_REALLOCATION] = 1;
      return {
        kind: 'unbrotli',
        options: { params, chunkSize: bounded(c, 'chunk_size', 4096, CHUNK, path, report) },
        maxInflateRatio: DEFAULT_MAX_INFLATE_RATIO,
      };
    },
  },
  'envoy.extensions.compression.zstd.decompressor.v3.Zstd': {
    extension: 'envoy.compression.zstd.decompressor',
    message: 'ZstdDecompressor',
    encoding: 'zstd',
    statPrefix: 'zstd',
    fields: { chunk_size: 'act', dictionaries: notYet('the zstd decompressor dictionaries') },
    codec: (c, path, report) => ({
      kind: 'unzstd',
      options: { chunkSize: bounded(c, 'chunk_size', 4096, CHUNK, path, report) },
      maxInflateRatio: DEFAULT_MAX_INFLATE_RATIO,
    }),
  },
};

/** The field tables of the libraries and their carrier, by message name. */
export const LIBRARY_FIELD_TABLES: Record<string, FieldTable> = {
  TypedExtensionConfig: acting('name', 'typed_config'),
  ...Object.fromEntries(
    [...Object.values(COMPRESSORS), ...Object.values(DECOMPRESSORS)].map((k) => [k.message, k.fields]),
  ),
};

/**
 * Compiles a `TypedExtensionConfig` naming a compressor (`direction: 'compressor'`) or a
 * decompressor library; null (reported by path) when it names none this build has.
 */
export function compileLibrary(
  raw: JsonObject | undefined,
  direction: 'compressor' | 'decompressor',
  path: string,
  report: Report,
): CompressionLibrary | null {
  if (raw === undefined) {
    report.error(path, 'required field missing', 'missing');
    return null;
  }
  checkFields(
    raw,
    path,
    report,
    LIBRARY_FIELD_TABLES.TypedExtensionConfig as FieldTable,
    'TypedExtensionConfig',
  );
  const name = typeof raw.name === 'string' ? raw.name : '';
  if (name === '') report.error(`${path}.name`, 'required field missing', 'missing');
  const typed = objectOf(raw.typed_config);
  const url = typeof typed['@type'] === 'string' ? typed['@type'] : '';
  const type = url.slice(url.lastIndexOf('/') + 1);
  const kind = (direction === 'compressor' ? COMPRESSORS : DECOMPRESSORS)[type];
  if (kind === undefined) {
    const known = Object.values(direction === 'compressor' ? COMPRESSORS : DECOMPRESSORS)
      .map((k) => k.extension)
      .join(', ');
    report.unsupported(
      `${path}.typed_config`,
      `'${type || 'no @type'}' is not a ${direction} library of this build (it has ${known})`,
    );
    return null;
  }
  const at = `${path}.typed_config`;
  checkFields(typed, at, report, kind.fields, kind.message);
  return { name, encoding: kind.encoding, statPrefix: kind.statPrefix, codec: kind.codec(typed, at, report) };
}
