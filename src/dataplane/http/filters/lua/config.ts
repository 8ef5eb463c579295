import { readFileSync } from 'node:fs';
import type { JsonObject } from '../../../../../events/config.js';
import { objectOf } from '../../../../../reducers/settings/values.js';
import { inlineBytes } from '../../../../bootstrap/data-source.js';
import { acting, checkFields, type FieldTable, notYet } from '../../../../bootstrap/honoured.js';
import type { Report } from '../../../../bootstrap/report.js';

/** A compiled `Lua`: the default script and the named ones routes may pick. */
export interface LuaConfig {
  inlineCode: string;
  /** `source_codes`, by name, as text. */
  sources: ReadonlyMap<string, string>;
}

/** A compiled `LuaPerRoute`: no script on this route, or the named one of `source_codes`. */
export type LuaPerRouteConfig = { disabled: true } | { name: string };

const LUA_FIELDS: FieldTable = acting('inline_code', 'source_codes');
const PER_ROUTE_FIELDS: FieldTable = {
  ...acting('disabled', 'name'),
  source_code: notYet('LuaPerRoute.source_code (a script given on the route itself)'),
};
const DATA_SOURCE_FIELDS: FieldTable = acting('filename', 'inline_bytes', 'inline_string');

/** The field tables of the Lua filter, by message name. */
export const LUA_FIELD_TABLES = {
  Lua: LUA_FIELDS,
  LuaPerRoute: PER_ROUTE_FIELDS,
  DataSource: DATA_SOURCE_FIELDS,
};

/** A `source_codes` entry's text: inline, or read once from its file at compile. */
function sourceText(raw: JsonObject, path: string, report: Report): string | undefined {
  checkFields(raw, path, report, DATA_SOURCE_FIELDS, 'DataSource');
  const inline = inlineBytes(raw);
  if (inline !== undefined) return inline.toString('utf8');
  if (typeof raw.filename === 'string') {
    try {
      return readFileSync(raw.filename, 'utf8');
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code ?? (err as Error).message;
      report.error(`${path}.filename`, `cannot read '${raw.filename}': ${code}`);
      return undefined;
    }
  }
  report.error(path, 'needs one of filename, inline_string, inline_bytes', 'missing');
  return undefined;
}

/**
 * Compiles a `Lua` config. The script itself is compiled when each worker starts its Lua
 * state (the VM loads asynchronously; docs/lua.md says what that means for validation).
 */
export function compileLua(raw: JsonObject, path: string, report: Report): LuaConfig {
  checkFields(raw, path, report, LUA_FIELDS, 'Lua');
  const inlineCode = typeof raw.inline_code === 'string' ? raw.inline_code : '';
  if (inlineCode === '') report.error(`${path}.inline_code`, 'required field missing', 'missing');
  const sources = new Map<string, string>();
  for (const [name, source] of Object.entries(objectOf(raw.source_codes))) {
    const text = sourceText(objectOf(source), `${path}.source_codes.${name}`, report);
    if (text !== undefined) sources.set(name, text);
  }
  return { inlineCode, sources };
}

/** Compiles a route's or virtual host's `LuaPerRoute`. */
export function compileLuaPerRoute(raw: JsonObject, path: string, report: Report): LuaPerRouteConfig {
  checkFields(raw, path, report, PER_ROUTE_FIELDS, 'LuaPerRoute');
  if (raw.disabled !== undefined) {
    if (raw.disabled !== true) report.error(`${path}.disabled`, 'must be true when set');
    return { disabled: true };
  }
  if (typeof raw.name === 'string' && raw.name !== '') return { name: raw.name };
  report.error(path, 'needs one of disabled, name', 'missing');
  return { disabled: true };
}
