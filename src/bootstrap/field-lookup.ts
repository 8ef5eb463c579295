/**
 * The field a key names in a message (proto name, `json_name` or lowerCamelCase), and the
 * findings for a key that names none or a deprecated one.
 */
import type protobuf from 'protobufjs';
import { nameOf, v3MessageName } from './schema.js';
import type { WalkContext } from './walk-context.js';

/**
 * The field a key names: its proto name, its `json_name` or its lowerCamelCase form. Own
 * properties only, so `toString` or `__proto__` is an unknown field, not `Object.prototype`.
 */
export function fieldOf(type: protobuf.Type, key: string): protobuf.Field | undefined {
  if (Object.hasOwn(type.fields, key)) return type.fields[key];
  return type.fieldsArray.find((f) => f.options?.json_name === key || camel(f.name) === key);
}

function camel(name: string): string {
  return name.replace(/_([a-z0-9])/g, (_m, c: string) => c.toUpperCase());
}

export function unknownField(
  ctx: WalkContext,
  here: string,
  key: string,
  type: protobuf.Type,
  v3Spelling?: string,
): void {
  const v2 = nameOf(type).slice(1);
  const v3 = v3MessageName(v2);
  const message = ctx.v3 && v3 !== v2 ? `${v3} (read as ${v2})` : v2;
  const spelling = v3Spelling ? `: '${key}' is the v2 spelling, v3 writes '${v3Spelling}'` : '';
  const what = `unknown field '${key}' in ${message}${spelling}`;
  if (!ctx.allowUnknown) {
    // In a v3 message it is most often a field of a later reference release (the v3 API grows):
    // say so, rather than only suspecting a typo.
    const why =
      ctx.v3 && !v3Spelling
        ? 'a field this build does not implement, or a misspelling; pass --allow-unknown-static-fields to ignore it'
        : 'check the spelling, or pass --allow-unknown-static-fields to ignore it';
    ctx.report.error(here, `${what} (${why})`, 'unknown');
    return;
  }
  ctx.report.unknownFields++;
  ctx.report.warn(here, `${what}, ignored (--allow-unknown-static-fields)`, `${nameOf(type)}.${key}`);
}

export function deprecatedField(
  ctx: WalkContext,
  here: string,
  field: protobuf.Field,
  type: protobuf.Type,
): void {
  const hint = field.name === 'hosts' ? ' (use load_assignment; when both are set load_assignment wins)' : '';
  ctx.report.warn(here, `using deprecated option '${nameOf(type).slice(1)}.${field.name}'${hint}`, undefined);
}
