/**
 * The bootstrap's canonical walk: parsed JSON or YAML read against the reflected proto type
 * into the canonical form (`events/config.ts`), message by message, with `Any`, `TypedStruct`
 * and the extension a `name` picks resolved; its leaves are in `canonical-scalars.ts` and
 * `field-lookup.ts`.
 */
import type protobuf from 'protobufjs';
import type { Json, JsonObject } from '../../events/index.js';
import { lowerLoadBalancingPolicy } from '../config/lb-policy.js';
import {
  badShape,
  canonicalDuration,
  canonicalScalar,
  describe,
  enumName,
  isDefaultScalar,
  isPlainObject,
  WRAPPERS,
} from './canonical-scalars.js';
import { extensionForType, findExtension } from './catalog.js';
import {
  extensionCategory,
  lacksType,
  missingType,
  perFilterConfigType,
  withoutV1Marker,
} from './extension-entries.js';
import type { ExtensionCategory } from './extensions.js';
import { deprecatedField, fieldOf, removedInV3, unknownField } from './field-lookup.js';
import { protobufjs } from './proto-root.js';
import { fieldPath } from './report.js';
import {
  isV3TypeUrl,
  messageType,
  nameOf,
  typeForUrl,
  typeUrlOf,
  v2FieldName,
  v3FieldName,
} from './schema.js';
import { lowerHttpProtocolOptions } from './v3-cluster.js';
import type { WalkContext } from './walk-context.js';

/**
 * Walks parsed JSON/YAML (or the JSON form of a decoded binary/text message) against the
 * reflected type and returns the canonical form (see `events/config.ts`), reporting every
 * problem with its field path. Never throws on bad input.
 */
export function canonicalMessage(
  value: unknown,
  type: protobuf.Type,
  path: string,
  ctx: WalkContext,
  parentTypeName = '',
): JsonObject | undefined {
  if (!isPlainObject(value)) {
    ctx.report.error(path, `expected an object (${nameOf(type).slice(1)}), got ${describe(value, path)}`);
    return undefined;
  }
  const out: JsonObject = {};
  const category = extensionCategory(nameOf(type), parentTypeName);
  for (const [key, raw] of Object.entries(value)) {
    const v2Name = fieldOf(type, key) ? undefined : v2FieldName(nameOf(type), key);
    const field = fieldOf(type, v2Name ?? key);
    const here = fieldPath(path, field?.name ?? key);
    const v3Spelling = ctx.v3 && field && !v2Name ? v3FieldName(nameOf(type), field.name) : undefined;
    if (!field || v3Spelling) {
      unknownField(ctx, here, key, type, v3Spelling ? { renamedTo: v3Spelling } : undefined);
      continue;
    }
    // A v3 spelling is read as its v2 field; findings name the field as written.
    if (v2Name) {
      ctx.written?.set(here, fieldPath(path, key));
      if (ctx.seen) ctx.seen.v3 = true;
    }
    if (raw === null || raw === undefined) continue;
    if (category && field.name === 'typed_config' && lacksType(raw)) {
      missingType(value, category, here, ctx);
      continue;
    }
    if (removedInV3(type, field)) {
      if (ctx.v3) {
        unknownField(ctx, here, key, type, { removed: true });
        continue;
      }
      // Only a v2 message can hold a field v3 removed.
      if (ctx.seen) ctx.seen.v2 = true;
    }
    if (field.options?.deprecated) deprecatedField(ctx, here, field, type);
    const converted = canonicalField(raw, field.resolve(), here, ctx, nameOf(type));
    if (converted !== undefined) out[field.name] = converted;
  }
  checkOneofs(out, type, path, ctx);
  if (out.per_filter_config !== undefined) typePerFilterConfig(out, path, ctx);
  if (nameOf(type) === '.envoy.api.v2.Cluster') {
    lowerHttpProtocolOptions(out, path, ctx.report, ctx.written);
    lowerLoadBalancingPolicy(out, path, ctx.report, ctx.written);
  }
  if (category) resolveExtension(out, value, category, path, ctx);
  return out;
}

/**
 * A route's, virtual host's or weighted cluster's `per_filter_config` holds each HTTP filter's
 * override as a Struct: each is read here as the message its key's filter reads and written
 * as a `typed_per_filter_config` `Any` is, so the route's compile step reads both maps alike
 * and no filter's compile step needs the loader.
 */
function typePerFilterConfig(owner: JsonObject, path: string, ctx: WalkContext): void {
  const map = owner.per_filter_config as JsonObject;
  for (const [key, value] of Object.entries(map)) {
    const typeName = perFilterConfigType(key);
    if (typeName === undefined) continue;
    const type = messageType(typeName);
    const here = `${fieldPath(path, 'per_filter_config')}[${JSON.stringify(key)}]`;
    // The canonical form read again (a worker's bootstrap, a dump) holds the `@type` written here.
    const again = isPlainObject(value) && typeof value['@type'] === 'string';
    const body = again ? canonicalAny(value, here, ctx) : canonicalMessage(value, type, here, ctx);
    if (body === undefined) delete map[key];
    else setEntry(map, key, again ? body : { '@type': typeUrlOf(type), ...body });
  }
}

/**
 * Sets `key` as an own data property: a plain assignment of `__proto__` would replace the
 * object's prototype and lose the entry (map keys and Struct fields are user-chosen).
 */
export function setEntry(target: JsonObject, key: string, value: Json): void {
  Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
}

function canonicalField(
  raw: unknown,
  field: protobuf.Field,
  here: string,
  ctx: WalkContext,
  parentTypeName: string,
): Json | undefined {
  if (field.map) {
    if (!isPlainObject(raw)) {
      ctx.report.error(here, `expected a map (object), got ${describe(raw, here)}`);
      return undefined;
    }
    const out: JsonObject = {};
    for (const [k, v] of Object.entries(raw)) {
      const converted = canonicalValue(v, field, `${here}[${JSON.stringify(k)}]`, ctx, parentTypeName, true);
      if (converted !== undefined) setEntry(out, k, converted);
    }
    return Object.keys(out).length > 0 ? out : undefined;
  }
  if (field.repeated) {
    // Protobuf's JSON parser, and so the reference, reads one value where a list is expected
    // as a one-element list; its own docs write `grpc_services: { envoy_grpc: {...} }`.
    if (!Array.isArray(raw)) {
      const one = canonicalValue(raw, field, here, ctx, parentTypeName, true);
      return one === undefined ? undefined : [one];
    }
    const out: Json[] = [];
    raw.forEach((v, i) => {
      const converted = canonicalValue(v, field, `${here}[${i}]`, ctx, parentTypeName, true);
      if (converted !== undefined) out.push(converted);
    });
    return out.length > 0 ? out : undefined;
  }
  return canonicalValue(raw, field, here, ctx, parentTypeName, field.partOf !== null);
}

/** One value of a field; `present` keeps default scalars (list/map elements, oneof members). */
function canonicalValue(
  raw: unknown,
  field: protobuf.Field,
  here: string,
  ctx: WalkContext,
  parentTypeName: string,
  present: boolean,
): Json | undefined {
  const resolved = field.resolvedType;
  const { Type, Enum } = protobufjs();
  if (resolved instanceof Type) return wellKnownOrMessage(raw, resolved, here, ctx, parentTypeName);
  if (resolved instanceof Enum) {
    const name = enumName(raw, resolved, here, ctx);
    return name === undefined || (!present && resolved.values[name] === 0) ? undefined : name;
  }
  const scalar = canonicalScalar(raw, field.type, here, ctx);
  return scalar === undefined || (!present && isDefaultScalar(scalar)) ? undefined : scalar;
}

function wellKnownOrMessage(
  raw: unknown,
  type: protobuf.Type,
  here: string,
  ctx: WalkContext,
  parentTypeName: string,
): Json | undefined {
  const name = nameOf(type);
  const wrapped = WRAPPERS[name];
  if (wrapped) {
    // `{ value: x }` is how a wrapper looks after decoding binary; bare `x` is proto3 JSON.
    const inner = isPlainObject(raw) && 'value' in raw ? raw.value : raw;
    return canonicalScalar(inner, wrapped, here, ctx);
  }
  switch (name) {
    case '.google.protobuf.Duration':
      return canonicalDuration(raw, here, ctx);
    case '.google.protobuf.Struct':
      return isPlainObject(raw) ? (raw as JsonObject) : badShape(ctx, here, 'an object (Struct)', raw);
    case '.google.protobuf.ListValue':
      return Array.isArray(raw) ? (raw as Json[]) : badShape(ctx, here, 'a list (ListValue)', raw);
    case '.google.protobuf.Value':
      return raw as Json;
    case '.google.protobuf.Any':
      return canonicalAny(raw, here, ctx);
    case '.google.protobuf.Timestamp':
    case '.google.protobuf.FieldMask':
      return typeof raw === 'string' ? raw : badShape(ctx, here, 'a string', raw);
    case '.envoy.type.Percent': {
      const out = canonicalMessage(raw, type, here, ctx, parentTypeName);
      const v = Number(out?.value ?? 0);
      if (out && !(v >= 0 && v <= 100))
        ctx.report.error(fieldPath(here, 'value'), `percent ${v} is not in 0..100`);
      return out;
    }
    default:
      return canonicalMessage(raw, type, here, ctx, parentTypeName);
  }
}

/**
 * `Any` as `{ "@type": url, ...fields }`. An empty `{}` is kept as `{}` so that the
 * extension resolution can fill in the `@type` its name implies (`typed_config: {}`).
 */
function canonicalAny(raw: unknown, here: string, ctx: WalkContext): JsonObject | undefined {
  if (!isPlainObject(raw)) return badShape(ctx, here, "an object with '@type' (Any)", raw);
  const url = raw['@type'];
  if (url === undefined) {
    if (Object.keys(raw).length === 0) return {};
    ctx.report.error(here, "an Any needs '@type' (e.g. '@type': type.googleapis.com/<message name>)");
    return undefined;
  }
  if (typeof url !== 'string') return badShape(ctx, fieldPath(here, '@type'), 'a type URL string', url);
  if (TYPED_STRUCT.has(url.slice(url.lastIndexOf('/') + 1))) return canonicalTypedStruct(raw, here, ctx);
  const type = typeForUrl(url);
  if (!type) {
    ctx.report.error(
      fieldPath(here, '@type'),
      `unknown type URL '${url}' (this build implements no message of that name)`,
    );
    return undefined;
  }
  const { '@type': _drop, ...rest } = raw;
  const wkt = nameOf(type).startsWith('.google.protobuf.');
  // The version of a message is the one its type URL names (v3 in a v2 bootstrap, or back).
  const inner = { ...ctx, v3: noteVersion(ctx, url) };
  const body = wkt
    ? wellKnownOrMessage(rest.value, type, fieldPath(here, 'value'), inner, '')
    : canonicalMessage(rest, type, here, inner);
  if (body === undefined) return undefined;
  return wkt
    ? { '@type': typeUrlOf(type), value: body }
    : { '@type': typeUrlOf(type), ...(body as JsonObject) };
}

/**
 * Whether `url` names a v3 message, noting in `ctx.seen` the version an `envoy.` one shows
 * (`google.protobuf.*` and `udpa.*` belong to neither).
 */
function noteVersion(ctx: WalkContext, url: string): boolean {
  const v3 = isV3TypeUrl(url);
  if (ctx.seen && url.slice(url.lastIndexOf('/') + 1).startsWith('envoy.')) ctx.seen[v3 ? 'v3' : 'v2'] = true;
  return v3;
}

/** The names of `TypedStruct`, the message that carries another message as a Struct. */
const TYPED_STRUCT = new Set(['udpa.type.v1.TypedStruct', 'xds.type.v3.TypedStruct']);

/**
 * A `TypedStruct` (`{ type_url, value }`) read as the message its `type_url` names, as the
 * reference reads one in any `typed_config`; errors name the fields under `value`.
 */
function canonicalTypedStruct(
  raw: Record<string, unknown>,
  here: string,
  ctx: WalkContext,
): JsonObject | undefined {
  for (const key of Object.keys(raw))
    if (key !== '@type' && key !== 'type_url' && key !== 'value')
      ctx.report.error(
        fieldPath(here, key),
        `unknown field '${key}' in TypedStruct (it has type_url and value)`,
      );
  const url = raw.type_url;
  if (typeof url !== 'string' || url === '') {
    ctx.report.error(fieldPath(here, 'type_url'), 'required field missing', 'missing');
    return undefined;
  }
  const type = typeForUrl(url);
  if (!type) {
    ctx.report.error(
      fieldPath(here, 'type_url'),
      `unknown type URL '${url}' (this build implements no message of that name)`,
    );
    return undefined;
  }
  const value = raw.value ?? {};
  if (!isPlainObject(value)) return badShape(ctx, fieldPath(here, 'value'), 'an object (Struct)', value);
  const body = canonicalMessage(value, type, fieldPath(here, 'value'), { ...ctx, v3: noteVersion(ctx, url) });
  return body === undefined ? undefined : { '@type': typeUrlOf(type), ...(body as JsonObject) };
}

function checkOneofs(out: JsonObject, type: protobuf.Type, path: string, ctx: WalkContext): void {
  for (const oneof of type.oneofsArray) {
    const set = oneof.oneof.filter((n) => out[n] !== undefined);
    if (set.length > 1) {
      ctx.report.error(path, `only one of ${oneof.oneof.join(', ')} may be set (found ${set.join(' and ')})`);
    }
  }
}

/**
 * Resolves the extension an object names (`name` + `config`/`typed_config`): rejects names
 * this build lacks and disabled ones, converts the deprecated `config` Struct to the typed
 * message, and leaves `typed_config` holding the `@type` of the resolved message.
 */
function resolveExtension(
  out: JsonObject,
  raw: Record<string, unknown>,
  category: ExtensionCategory,
  path: string,
  ctx: WalkContext,
): void {
  const name = typeof out.name === 'string' ? out.name : '';
  const typed = out.typed_config as JsonObject | undefined;
  const typedName =
    typeof typed?.['@type'] === 'string' ? typed['@type'].slice(typed['@type'].lastIndexOf('/') + 1) : '';
  // The reference picks the extension by the `@type` of its config and reads `name` only
  // when no extension has that type: `name: envoy.access_loggers.stdout` with a
  // `StderrAccessLog` config (its single-page-app example) logs to stderr.
  const extension =
    (typedName ? extensionForType(category, typedName) : undefined) ?? findExtension(category, name);
  if (!extension) {
    if (typed !== undefined || 'config' in raw || name !== '') {
      ctx.report.error(
        fieldPath(path, 'name'),
        `unknown extension '${name}' in category ${category}: not implemented by this build`,
      );
    }
    return;
  }
  if (ctx.disabled.has(`${extension.category}/${extension.name}`)) {
    ctx.report.error(
      fieldPath(path, 'name'),
      `extension '${name || extension.name}' is disabled by --disable-extensions (${extension.category}/${extension.name})`,
    );
    return;
  }
  const configType = messageType(extension.configType);
  if (typedName && typedName !== extension.configType) {
    ctx.report.error(
      fieldPath(path, 'typed_config.@type'),
      `'${typedName}' is not the config of extension '${extension.name}' (expected ${extension.configType})`,
    );
    return;
  }
  let body: JsonObject = typed ?? {};
  if (out.config !== undefined) {
    const here = fieldPath(path, 'config');
    const v2 = withoutV1Marker(out.config, here, ctx);
    body = (v2 === undefined ? undefined : canonicalMessage(v2, configType, here, ctx)) ?? {};
    delete out.config;
    ctx.written?.set(fieldPath(path, 'typed_config'), here);
    if (v2 === undefined) ctx.refused?.add(here);
  }
  const { '@type': _drop, ...fields } = body;
  out.typed_config = { '@type': typeUrlOf(configType), ...fields };
}
