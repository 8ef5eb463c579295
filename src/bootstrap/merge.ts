import protobuf from 'protobufjs';
import type { Json, JsonObject } from '../../events/index.js';
import { setEntry } from './canonical.js';
import { nameOf } from './schema.js';

/** Types whose canonical JSON is one value, replaced whole by a merge (as protobuf does for scalars). */
function replacedWhole(type: protobuf.Type): boolean {
  return nameOf(type).startsWith('.google.protobuf.') && nameOf(type) !== '.google.protobuf.Struct';
}

/**
 * Merges `over` into `base` (both canonical) with protobuf `MergeFrom` semantics: scalars
 * replaced, messages merged field by field, repeated fields appended, map entries replaced
 * by key, and setting one member of a oneof clears the others. Neither input is changed.
 */
export function mergeCanonical(base: JsonObject, over: JsonObject, type: protobuf.Type): JsonObject {
  const out: JsonObject = { ...base };
  for (const [key, value] of Object.entries(over)) {
    const field = Object.hasOwn(type.fields, key) ? type.fields[key] : undefined;
    if (!field) {
      setEntry(out, key, value);
      continue;
    }
    if (field.partOf) for (const sibling of field.partOf.oneof) if (sibling !== key) delete out[sibling];
    const previous = out[key];
    out[key] = previous === undefined ? value : mergeField(previous, value, field.resolve());
  }
  return out;
}

function mergeField(previous: Json, value: Json, field: protobuf.Field): Json {
  if (field.map) return { ...(previous as JsonObject), ...(value as JsonObject) };
  if (field.repeated) return [...(previous as Json[]), ...(value as Json[])];
  const type = field.resolvedType;
  if (!(type instanceof protobuf.Type) || replacedWhole(type)) return value;
  if (nameOf(type) === '.google.protobuf.Struct')
    return { ...(previous as JsonObject), ...(value as JsonObject) };
  return mergeCanonical(previous as JsonObject, value as JsonObject, type);
}
