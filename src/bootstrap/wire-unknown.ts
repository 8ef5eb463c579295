import protobuf from 'protobufjs';
import { nameOf, typeForUrl } from './schema.js';

/** A field number a binary message holds that its type (as this build knows it) has not. */
export interface UnknownWireField {
  /** The message's path, as the canonical walk names paths (`load_assignment.endpoints[0]`); '' at the top. */
  path: string;
  /** `#<number>`: a field known only by its number. */
  key: string;
  /** The message that lacks it. */
  type: protobuf.Type;
}

const join = (base: string, name: string) => (base ? `${base}.${name}` : name);

/**
 * The unknown fields of `bytes`, a message of `type` that protobufjs already decoded (so the
 * bytes are well formed and nested at most 100 deep). protobufjs skips unknown fields without
 * a word; the reference sees them (`server.dynamic_unknown_fields`, and a rejection with
 * `--reject-unknown-dynamic-fields`), as this build does for the names of JSON resources. So
 * the wire is walked again, into sub-messages, map values and `Any` payloads.
 */
export function unknownWireFields(
  type: protobuf.Type,
  bytes: Uint8Array,
  path = '',
  out: UnknownWireField[] = [],
): UnknownWireField[] {
  const reader = protobuf.Reader.create(bytes);
  const counts = new Map<number, number>();
  while (reader.pos < reader.len) {
    const tag = reader.uint32();
    const id = tag >>> 3;
    const wire = tag & 7;
    const field = type.fieldsById[id];
    if (!field) {
      out.push({ path, key: `#${id}`, type });
      reader.skipType(wire);
      continue;
    }
    const index = counts.get(id) ?? 0;
    counts.set(id, index + 1);
    const here = join(path, field.repeated ? `${field.name}[${index}]` : field.name);
    if (wire !== 2) {
      reader.skipType(wire);
      continue;
    }
    const sub = reader.bytes();
    if (field instanceof protobuf.MapField) mapEntry(field, sub, join(path, field.name), out);
    else if (field.resolvedType instanceof protobuf.Type) message(field.resolvedType, sub, here, out);
  }
  return out;
}

/** A sub-message; an `Any` is walked as the message its type URL names. */
function message(type: protobuf.Type, bytes: Uint8Array, path: string, out: UnknownWireField[]): void {
  if (nameOf(type) !== '.google.protobuf.Any') {
    unknownWireFields(type, bytes, path, out);
    return;
  }
  const any = type.decode(bytes) as unknown as { type_url?: string; value?: Uint8Array };
  const inner = any.type_url ? typeForUrl(any.type_url) : undefined;
  if (inner && any.value) unknownWireFields(inner, any.value, path, out);
}

/** One map entry (key 1, value 2): the value walked when it is a message. */
function mapEntry(field: protobuf.MapField, bytes: Uint8Array, path: string, out: UnknownWireField[]): void {
  if (!(field.resolvedType instanceof protobuf.Type)) return;
  const reader = protobuf.Reader.create(bytes);
  let key = '';
  let value: Uint8Array | undefined;
  while (reader.pos < reader.len) {
    const tag = reader.uint32();
    if (tag >>> 3 === 1 && field.keyType === 'string' && (tag & 7) === 2) key = reader.string();
    else if (tag >>> 3 === 2 && (tag & 7) === 2) value = reader.bytes();
    else reader.skipType(tag & 7);
  }
  if (value) message(field.resolvedType, value, `${path}[${JSON.stringify(key)}]`, out);
}
