import { constants as bufferConstants, isUtf8 } from 'node:buffer';
import { statSync } from 'node:fs';
import path from 'node:path';
import { LineCounter, parseDocument } from 'yaml';
import { decodeBinary, decodeText } from './decode.js';
import { readNamedFile } from './read-file.js';
import { BOOTSTRAP_TYPE, messageType } from './schema.js';
import { type UnknownWireField, unknownWireFields } from './wire-unknown.js';

/**
 * A bootstrap source parsed to JSON, or why it could not be. A binary one carries the field
 * numbers its types lack (`unknownWireFields`), which its JSON cannot show, and its bytes.
 */
export type Parsed =
  | { ok: true; json: unknown; unknownWire?: UnknownWireField[]; binary?: Uint8Array }
  | { ok: false; error: string };

/** The formats `-c` understands, by file extension. */
export const FORMATS: Record<string, 'json' | 'yaml' | 'pb' | 'pb_text'> = {
  '.json': 'json',
  '.yaml': 'yaml',
  '.yml': 'yaml',
  '.pb': 'pb',
  '.pb_text': 'pb_text',
};

/**
 * YAML (and JSON, which YAML reads too) with anchors, aliases and merge keys. Syntax
 * errors come back with their line and column. YAML 1.1's tags (`!!set`, `!!omap`, `!!binary`,
 * `!!timestamp`) are not resolved: each node stays the map, list or string it is written as,
 * as the reference's YAML reader leaves them. Resolved, they made a Set, a Map, bytes or a Date,
 * which no field reads: `static_resources: !!omap [...]` loaded as no resources at all and
 * `--mode validate` said OK.
 */
export function parseYamlText(text: string, label: string): Parsed {
  const lineCounter = new LineCounter();
  const doc = parseDocument(text, {
    merge: true,
    prettyErrors: false,
    uniqueKeys: true,
    resolveKnownTags: false,
    lineCounter,
  });
  const problem = doc.errors[0];
  if (problem) {
    const at = lineCounter.linePos(problem.pos[0]);
    const where = `line ${at.line}, column ${at.col}`;
    return { ok: false, error: `${label}: ${where}: YAML syntax error: ${problem.message.split('\n')[0]}` };
  }
  // Some problems surface only while building the value: a merge key over a non-map, an
  // alias count past the limit (a billion-laughs document).
  let json: unknown;
  try {
    json = doc.toJS({ maxAliasCount: 10_000 });
  } catch (err) {
    return { ok: false, error: `${label}: YAML error: ${(err as Error).message.split('\n')[0]}` };
  }
  return { ok: true, json: json ?? {} };
}

/**
 * JSON with a line/column for syntax errors. V8 gives a position for some errors only; for an
 * unexpected token it quotes the text around it instead, which may be a secret's value. So the
 * quote is dropped and the place is found by the YAML parser's JSON schema, which reads JSON
 * as JSON and says where it stops.
 */
export function parseJsonText(text: string, label: string): Parsed {
  if (text.startsWith('\uFEFF'))
    return {
      ok: false,
      error: `${label}: line 1, column 1: JSON syntax error: a byte order mark (U+FEFF) before the JSON text; save the file as UTF-8 without one`,
    };
  try {
    const json: unknown = JSON.parse(text);
    const duplicate = duplicateKey(text);
    if (duplicate) return { ok: false, error: `${label}: ${duplicate}` };
    return { ok: true, json };
  } catch (err) {
    const message = (err as Error).message;
    const position = /position (\d+)/.exec(message);
    let where = 'unknown position';
    if (position) {
      const before = text.slice(0, Number(position[1])).split('\n');
      where = `line ${before.length}, column ${before[before.length - 1]!.length + 1}`;
    } else {
      const lineCounter = new LineCounter();
      const problem = parseDocument(text, { schema: 'json', lineCounter, prettyErrors: false }).errors[0];
      if (problem) {
        const at = lineCounter.linePos(problem.pos[0]);
        where = `line ${at.line}, column ${at.col}`;
      }
    }
    const reason = /^(Unexpected token '.*?'), /.exec(message)?.[1] ?? message;
    return { ok: false, error: `${label}: ${where}: JSON syntax error: ${reason}` };
  }
}

/**
 * Where a JSON object names a key twice, or null. `JSON.parse` keeps the last value and drops
 * the first without a word; the reference's parser refuses a field set twice (`'id' has
 * already been set`), as this loader's YAML refuses a key twice. `text` is valid JSON (it
 * parsed): one pass over its strings and brackets, each object's keys in a set.
 */
function duplicateKey(text: string): string | null {
  const objects: Array<Set<string> | null> = [];
  let expectKey = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x22) {
      const start = i;
      let escaped = false;
      for (i++; text.charCodeAt(i) !== 0x22; i++) {
        if (text.charCodeAt(i) !== 0x5c) continue;
        escaped = true;
        i++;
      }
      if (!expectKey) continue;
      expectKey = false;
      const keys = objects[objects.length - 1] as Set<string>;
      const key = escaped ? (JSON.parse(text.slice(start, i + 1)) as string) : text.slice(start + 1, i);
      if (!keys.has(key)) {
        keys.add(key);
        continue;
      }
      const before = text.slice(0, start).split('\n');
      const where = `line ${before.length}, column ${before[before.length - 1]!.length + 1}`;
      return `${where}: JSON error: key ${JSON.stringify(key)} appears twice in one object`;
    }
    if (c === 0x7b) {
      objects.push(new Set());
      expectKey = true;
    } else if (c === 0x5b) objects.push(null);
    else if (c === 0x7d || c === 0x5d) objects.pop();
    else if (c === 0x2c) expectKey = objects[objects.length - 1] != null;
  }
  return null;
}

/**
 * Reads `-c/--config-path` (or another message, e.g. an xDS file source's DiscoveryResponse),
 * choosing the format by extension.
 */
export function readConfigFile(file: string, typeName = BOOTSTRAP_TYPE): Parsed {
  const extension = path.extname(file).toLowerCase();
  const format = FORMATS[extension];
  if (!format) {
    return {
      ok: false,
      error:
        `${file}: unsupported config file extension '${extension}': ` +
        `use .json, .yaml, .yml, .pb (binary proto3) or .pb_text (text proto3)`,
    };
  }
  let bytes: Buffer;
  try {
    // Text past the longest string the runtime makes cannot be parsed: refused before a byte is
    // read (it was read whole, then failed as a "text proto3 parse error" whatever its format).
    const size = format === 'pb' ? 0 : (statSync(file, { throwIfNoEntry: false })?.size ?? 0);
    if (size > bufferConstants.MAX_STRING_LENGTH)
      return {
        ok: false,
        error: `${file}: ${size} bytes, past the ${bufferConstants.MAX_STRING_LENGTH} a config text may have (the longest string the runtime makes)`,
      };
    bytes = readNamedFile(file);
  } catch (err) {
    return { ok: false, error: `${file}: cannot read the config file: ${(err as Error).message}` };
  }
  if (format !== 'pb' && !isUtf8(bytes)) return { ok: false, error: `${file}: ${notUtf8(bytes)}` };
  try {
    switch (format) {
      case 'json':
        return parseJsonText(bytes.toString('utf8'), file);
      case 'yaml':
        return parseYamlText(bytes.toString('utf8'), file);
      case 'pb':
        return {
          ok: true,
          json: decodeBinary(bytes, typeName),
          unknownWire: unknownWireFields(messageType(typeName), bytes),
          binary: bytes,
        };
      case 'pb_text':
        return { ok: true, json: decodeText(bytes.toString('utf8'), typeName) };
    }
  } catch (err) {
    const kind = {
      json: 'JSON error',
      yaml: 'YAML error',
      pb: 'binary proto3 decode error',
      pb_text: 'text proto3 parse error',
    }[format];
    return { ok: false, error: `${file}: ${kind}: ${(err as Error).message}` };
  }
}

/**
 * Where text that is not UTF-8 breaks, by line. The reference's parsers refuse such bytes;
 * decoding them anyway would put U+FFFD in a name or a header value without a word.
 */
function notUtf8(bytes: Buffer): string {
  let start = 0;
  for (let line = 1; ; line++) {
    const end = bytes.indexOf(0x0a, start);
    if (!isUtf8(bytes.subarray(start, end < 0 ? bytes.length : end)))
      return `line ${line}: not valid UTF-8 text`;
    if (end < 0) return 'not valid UTF-8 text';
    start = end + 1;
  }
}
