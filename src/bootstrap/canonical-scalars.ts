/**
 * The leaves of the bootstrap's canonical walk (`canonical.ts`): a proto scalar, enum, wrapper
 * or Duration as canonical JSON, each bad value a finding naming what was expected.
 */
import type protobuf from 'protobufjs';
import { type Json, SECRET_FIELD_NAMES, SECRET_LOCATION_FIELDS } from '../../events/index.js';
import { formatDuration, parseDuration } from './duration.js';
import { nameOf } from './schema.js';
import type { WalkContext } from './walk-context.js';

const INT32 = new Set(['int32', 'sint32', 'sfixed32']);
const UINT32 = new Set(['uint32', 'fixed32']);
const UINT64 = new Set(['uint64', 'fixed64']);
export const WRAPPERS: Record<string, string> = {
  '.google.protobuf.DoubleValue': 'double',
  '.google.protobuf.FloatValue': 'float',
  '.google.protobuf.Int64Value': 'int64',
  '.google.protobuf.UInt64Value': 'uint64',
  '.google.protobuf.Int32Value': 'int32',
  '.google.protobuf.UInt32Value': 'uint32',
  '.google.protobuf.BoolValue': 'bool',
  '.google.protobuf.StringValue': 'string',
  '.google.protobuf.BytesValue': 'bytes',
};

export function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * A value for a finding: its type and, unless `here` is inside a secret (a private key, a
 * password), the value itself. A finding goes to the log, the event log and `--mode
 * validate`'s output, none of which may show a key that was one typo away from valid.
 */
export function describe(value: unknown, here: string): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'a list';
  if (typeof value === 'object') return 'an object';
  if (inSecret(here)) return `a ${typeof value} (a secret: not shown)`;
  // JSON.stringify says `null` for NaN and the infinities YAML's `.nan` and `.inf` give.
  if (typeof value === 'number') return `number ${value}`;
  return `${typeof value} ${JSON.stringify(value)}`;
}

/** Whether a field path names a secret's value, not where the secret is (its `filename`). */
function inSecret(path: string): boolean {
  const names = path.split(/[.[\]]/);
  return names.some((n) => SECRET_FIELD_NAMES.has(n)) && !SECRET_LOCATION_FIELDS.has(names.at(-1) ?? '');
}

export function isDefaultScalar(value: Json): boolean {
  return value === 0 || value === '' || value === false || value === '0';
}

export function enumName(
  raw: unknown,
  type: protobuf.Enum,
  here: string,
  ctx: WalkContext,
): string | undefined {
  if (typeof raw === 'string') {
    const upper = raw.toUpperCase();
    const name = Object.keys(type.values).find((n) => n.toUpperCase() === upper);
    if (name !== undefined) return name;
  } else if (typeof raw === 'number' && type.valuesById[raw] !== undefined) {
    return type.valuesById[raw];
  }
  const names = Object.keys(type.values).join(', ');
  ctx.report.error(
    here,
    `invalid value ${describe(raw, here)} for ${nameOf(type).slice(1)} (expected one of ${names})`,
  );
  return undefined;
}

const INTEGER_TEXT = /^-?\d+$/;

/** A scalar of proto type `kind` in canonical JSON; 64-bit integers become strings. */
export function canonicalScalar(
  raw: unknown,
  kind: string,
  here: string,
  ctx: WalkContext,
): Json | undefined {
  const bad = (expected: string): undefined => {
    ctx.report.error(here, `expected ${expected}, got ${describe(raw, here)}`);
    return undefined;
  };
  if (kind === 'string') {
    if (typeof raw === 'string') return raw;
    return typeof raw === 'number' || typeof raw === 'boolean' ? String(raw) : bad('a string');
  }
  if (kind === 'bool') return typeof raw === 'boolean' ? raw : bad('true or false');
  if (kind === 'bytes') {
    return typeof raw === 'string' && /^[A-Za-z0-9+/_-]*=*$/.test(raw) ? raw : bad('base64 bytes');
  }
  if (kind === 'double' || kind === 'float') {
    if (typeof raw === 'number') return raw;
    if (raw === 'NaN' || raw === 'Infinity' || raw === '-Infinity') return raw;
    if (typeof raw === 'string' && raw.trim() !== '' && Number.isFinite(Number(raw))) return Number(raw);
    return bad('a number');
  }
  const text =
    typeof raw === 'number' ? (Number.isInteger(raw) ? String(raw) : '') : typeof raw === 'string' ? raw : '';
  if (!INTEGER_TEXT.test(text)) return bad(`an integer (${kind})`);
  const big = BigInt(text);
  const unsigned = UINT32.has(kind) || UINT64.has(kind);
  const bits = INT32.has(kind) || UINT32.has(kind) ? 32n : 64n;
  const min = unsigned ? 0n : -(1n << (bits - 1n));
  const max = unsigned ? (1n << bits) - 1n : (1n << (bits - 1n)) - 1n;
  if (big < min || big > max) return bad(`an integer in ${min}..${max} (${kind})`);
  return bits === 64n ? big.toString() : Number(big);
}

export function badShape(ctx: WalkContext, here: string, expected: string, raw: unknown): undefined {
  ctx.report.error(here, `expected ${expected}, got ${describe(raw, here)}`);
  return undefined;
}

export function canonicalDuration(raw: unknown, here: string, ctx: WalkContext): string | undefined {
  const parts = typeof raw === 'string' ? parseDuration(raw) : undefined;
  if (!parts) return badShape(ctx, here, "a duration like '0.25s' or '5s'", raw);
  const text = formatDuration(parts);
  if (text.startsWith('-')) {
    ctx.report.error(here, `duration ${text} is negative; durations must be >= 0s`);
    return undefined;
  }
  return text;
}
