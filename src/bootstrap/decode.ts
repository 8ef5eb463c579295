import protobuf from 'protobufjs';
import textformat from 'protobufjs/ext/textformat.js';
import type { Json, JsonObject } from '../../events/index.js';
import { setEntry } from './canonical.js';
import { durationFromMessage } from './duration.js';
import { canonicalTypeName, messageType, nameOf, TYPE_URL_PREFIX, typeForUrl } from './schema.js';

/** Bytes as proto3 JSON writes them (standard base64). */
function base64(bytes: Uint8Array): string {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('base64');
}

/**
 * `google.protobuf.Value` as JSON. The member set is found by field number, not name: the
 * schema's Value comes from protobufjs's bundled copy, whose fields are camelCase
 * (`stringValue`) while every other message keeps the .proto's snake_case.
 */
function structValue(value: Record<string, unknown>): Json {
  for (const field of messageType('google.protobuf.Value').fieldsArray) {
    if (!Object.hasOwn(value, field.name)) continue;
    const member = value[field.name];
    if (member === undefined || member === null) continue;
    switch (field.id) {
      case 2:
        return Number(member);
      case 3:
        return String(member);
      case 4:
        return Boolean(member);
      case 5:
        return structObject(member as Record<string, unknown>);
      case 6:
        return listValue(member as Record<string, unknown>);
    }
  }
  return null;
}

function structObject(struct: Record<string, unknown>): JsonObject {
  const out: JsonObject = {};
  for (const [k, v] of Object.entries((struct.fields ?? {}) as Record<string, Record<string, unknown>>)) {
    setEntry(out, k, structValue(v));
  }
  return out;
}

function listValue(list: Record<string, unknown>): Json[] {
  return ((list.values ?? []) as Record<string, unknown>[]).map(structValue);
}

/**
 * A decoded message as proto3 JSON (field names as in the .proto), so binary and text
 * bootstraps go through the same canonical walk and validation as JSON and YAML ones.
 * `Any` payloads are decoded by their type URL; unknown URLs are left for the walk to report.
 */
export function messageToJson(type: protobuf.Type, message: Record<string, unknown>): Json {
  switch (nameOf(type)) {
    case '.google.protobuf.Duration':
      return durationFromMessage(message.seconds, message.nanos);
    case '.google.protobuf.Struct':
      return structObject(message);
    case '.google.protobuf.Value':
      return structValue(message);
    case '.google.protobuf.ListValue':
      return listValue(message);
    case '.google.protobuf.Any':
      return anyToJson(message);
    case '.google.protobuf.Timestamp':
      return timestampToJson(message);
    case '.google.protobuf.FieldMask':
      return ((message.paths ?? []) as string[]).join(',');
  }
  if (nameOf(type).startsWith('.google.protobuf.') && nameOf(type).endsWith('Value')) {
    return scalarToJson(type.fields.value!, message.value);
  }
  const out: JsonObject = {};
  for (const field of type.fieldsArray) {
    if (!Object.hasOwn(message, field.name)) continue;
    const value = message[field.name];
    if (value === undefined || value === null) continue;
    if (field.map) {
      if (Object.keys(value as object).length === 0) continue;
      const entries: JsonObject = {};
      for (const [k, v] of Object.entries(value as Record<string, unknown>))
        setEntry(entries, k, valueToJson(field, v));
      out[field.name] = entries;
    } else if (field.repeated) {
      if ((value as unknown[]).length === 0) continue;
      out[field.name] = (value as unknown[]).map((v) => valueToJson(field, v));
    } else {
      out[field.name] = valueToJson(field, value);
    }
  }
  return out;
}

function valueToJson(field: protobuf.Field, value: unknown): Json {
  const resolved = field.resolve().resolvedType;
  if (resolved instanceof protobuf.Type) return messageToJson(resolved, value as Record<string, unknown>);
  if (resolved instanceof protobuf.Enum) return resolved.valuesById[value as number] ?? (value as number);
  return scalarToJson(field, value);
}

function scalarToJson(field: protobuf.Field, value: unknown): Json {
  if (value instanceof Uint8Array) return base64(value);
  if (typeof value === 'object' && value !== null) return String(value); // a Long
  if (/64$/.test(field.type)) return String(value);
  return value as Json;
}

/** RFC 3339 in UTC, as proto3 JSON writes a Timestamp (fractional digits only when needed). */
function timestampToJson(message: Record<string, unknown>): string {
  const seconds = Number(String(message.seconds ?? 0));
  const nanos = Number(message.nanos ?? 0);
  const whole = new Date(seconds * 1000).toISOString().slice(0, 19);
  const fraction = nanos === 0 ? '' : `.${String(nanos).padStart(9, '0').replace(/0+$/, '')}`;
  return `${whole}${fraction}Z`;
}

function anyToJson(message: Record<string, unknown>): Json {
  const url = String(message.type_url ?? '');
  const type = typeForUrl(url);
  if (!type) return { '@type': url };
  const inner = type.decode(
    (message.value as Uint8Array | undefined) ?? new Uint8Array(),
  ) as unknown as Record<string, unknown>;
  const body = messageToJson(type, inner);
  if (nameOf(type).startsWith('.google.protobuf.')) return { '@type': url, value: body };
  return { '@type': url, ...(body as JsonObject) };
}

/** Decodes a binary (`.pb`) bootstrap. Throws the decoder's error on malformed bytes. */
export function decodeBinary(bytes: Uint8Array, typeName: string): Json {
  const type = messageType(typeName);
  return messageToJson(type, type.decode(bytes) as unknown as Record<string, unknown>);
}

/**
 * Parses a text-format (`.pb_text`) bootstrap. Any-expansion names (`[type.googleapis.com/x]`)
 * are rewritten to the message this build resolves them to first, so `proxy.` and v3 names
 * work as they do in JSON. Throws the parser's error (with its line) on bad input.
 */
export function decodeText(text: string, typeName: string): Json {
  const type = messageType(typeName);
  const rewritten = text.replace(
    /\[\s*([A-Za-z0-9_.-]+\/)?([A-Za-z_][A-Za-z0-9_.]*)\s*\]/g,
    (whole, prefix: string | undefined, name: string) =>
      prefix === undefined ? whole : `[${TYPE_URL_PREFIX}${canonicalTypeName(prefix + name)}]`,
  );
  const message = textformat.fromText(type, rewritten) as unknown as Record<string, unknown>;
  return messageToJson(type, message);
}
