import type { JsonObject } from '../../../../../events/config.js';
import { objectOf } from '../../../../../reducers/settings/values.js';
import { inlineBytes } from '../../../../bootstrap/data-source.js';
import { acting, checkFields, type FieldTable } from '../../../../bootstrap/honoured.js';
import { readNamedFile } from '../../../../bootstrap/read-file.js';
import type { Report } from '../../../../bootstrap/report.js';
import { ABSENT_METHODS } from './prelude.js';
import { syntaxErrors } from './syntax.js';

/** A compiled `Lua`: the default script and the named ones routes may pick. */
export interface LuaConfig {
  /**
   * The script of routes that name none, and the field it came from (also its chunk name in
   * Lua's messages); null when the filter has none, so such routes run no script.
   */
  main: { code: string; field: 'inline_code' | 'default_source_code' } | null;
  /** `source_codes`, by name, as text. */
  sources: ReadonlyMap<string, string>;
  /** `stat_prefix`: the errors counter's scope under `lua.`; '' for none. */
  statPrefix: string;
  /** `clear_route_cache` (default true): a script that changes request headers routes the request again. */
  clearRouteCache: boolean;
}

/**
 * A compiled `LuaPerRoute`: no script on this route, the named one of `source_codes`, a
 * script of its own (`source_code`, which each worker loads the first time a request needs it),
 * or the default one; each with the context `filterContext()` answers.
 */
export type LuaPerRouteConfig = (
  | { disabled: true }
  | { name: string }
  | { code: string }
  | { main: true }
) & {
  /** `filter_context`: what `filterContext()` answers on this route. */
  context: JsonObject;
};

const LUA_FIELDS: FieldTable = acting(
  'inline_code',
  'default_source_code',
  'source_codes',
  'stat_prefix',
  'clear_route_cache',
);
const PER_ROUTE_FIELDS: FieldTable = acting('disabled', 'name', 'source_code', 'filter_context');
const DATA_SOURCE_FIELDS: FieldTable = acting('filename', 'inline_bytes', 'inline_string');

/** The field tables of the Lua filter, by message name. */
export const LUA_FIELD_TABLES = {
  Lua: LUA_FIELDS,
  LuaPerRoute: PER_ROUTE_FIELDS,
  DataSource: DATA_SOURCE_FIELDS,
};

/** A `DataSource` script's text (`default_source_code`, `source_codes`): inline, or read once from its file at compile. */
function sourceText(raw: JsonObject, path: string, report: Report): string | undefined {
  checkFields(raw, path, report, DATA_SOURCE_FIELDS, 'DataSource');
  const inline = inlineBytes(raw);
  if (inline !== undefined) return inline.toString('utf8');
  if (typeof raw.filename === 'string') {
    try {
      return readNamedFile(raw.filename).toString('utf8');
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code ?? (err as Error).message;
      report.error(`${path}.filename`, `cannot read '${raw.filename}': ${code}`);
      return undefined;
    }
  }
  report.error(path, 'needs one of filename, inline_string, inline_bytes', 'missing');
  return undefined;
}

/** Refuses a script that does not compile, naming its field and Lua's message (`inline_code:3: ...`). */
function checkSyntax(
  main: LuaConfig['main'],
  sources: ReadonlyMap<string, string>,
  path: string,
  report: Report,
): void {
  const scripts = [
    ...(main === null ? [] : [{ name: main.field, code: main.code, field: `${path}.${main.field}` }]),
    ...[...sources].map(([name, code]) => ({
      name: `source_codes.${name}`,
      code,
      field: `${path}.source_codes.${name}`,
    })),
  ];
  if (scripts.length === 0) return;
  const errors = syntaxErrors(scripts);
  if (typeof errors === 'string') {
    report.warn(path, `${errors}; each worker checks the scripts when it loads them`);
    return;
  }
  scripts.forEach((s, i) => {
    const error = errors[i];
    if (error != null) report.error(s.field, `the script does not compile: ${error}`);
    else warnAbsentCalls(s.code, s.field, report);
  });
}

const ABSENT = Object.values(ABSENT_METHODS).flat();
const ABSENT_CALL = new RegExp(`:\\s*(${ABSENT.join('|')})\\s*\\(`, 'g');

/**
 * Warns of a script that calls a handle method of the reference's that this proxy does not
 * have: the call raises an error naming it when it runs (docs/lua.md). A warning, not a
 * refusal: the call may sit in a branch that never runs.
 */
function warnAbsentCalls(code: string, field: string, report: Report): void {
  const names = new Set([...code.matchAll(ABSENT_CALL)].map((m) => m[1]));
  if (names.size > 0)
    report.warn(
      field,
      `the script calls ${[...names].map((n) => `${n}()`).join(', ')}, which this proxy does not implement: each call raises a script error (docs/lua.md)`,
    );
}

/**
 * Compiles a `Lua` config: its fields, and its scripts' syntax (src/dataplane/http/filters/lua/syntax.ts);
 * a script that fails at its top level is found when a worker runs it (docs/lua.md).
 */
export function compileLua(raw: JsonObject, path: string, report: Report): LuaConfig {
  checkFields(raw, path, report, LUA_FIELDS, 'Lua');
  const main = mainScript(raw, path, report);
  const sources = new Map<string, string>();
  for (const [name, source] of Object.entries(objectOf(raw.source_codes))) {
    const text = sourceText(objectOf(source), `${path}.source_codes.${name}`, report);
    if (text !== undefined) sources.set(name, text);
  }
  checkSyntax(main, sources, path, report);
  // A BoolValue, as the canonical config holds it: the value, or `{ value }`.
  const clear = raw.clear_route_cache;
  return {
    main,
    sources,
    statPrefix: typeof raw.stat_prefix === 'string' ? raw.stat_prefix : '',
    clearRouteCache: !(clear === false || objectOf(clear).value === false),
  };
}

/**
 * The default script: v2's `inline_code`, or v3's `default_source_code` (a `DataSource`); the
 * reference refuses both at once. With neither, only routes naming a `source_codes` entry run one.
 */
function mainScript(raw: JsonObject, path: string, report: Report): LuaConfig['main'] {
  const inline = typeof raw.inline_code === 'string' ? raw.inline_code : '';
  if (raw.default_source_code === undefined)
    return inline === '' ? null : { code: inline, field: 'inline_code' };
  if (inline !== '') {
    report.error(path, 'only one of inline_code and default_source_code may be set');
    return null;
  }
  const code = sourceText(objectOf(raw.default_source_code), `${path}.default_source_code`, report);
  return code === undefined ? null : { code, field: 'default_source_code' };
}

/** Compiles a route's or virtual host's `LuaPerRoute`. */
export function compileLuaPerRoute(raw: JsonObject, path: string, report: Report): LuaPerRouteConfig {
  checkFields(raw, path, report, PER_ROUTE_FIELDS, 'LuaPerRoute');
  const context = objectOf(raw.filter_context);
  if (raw.disabled !== undefined) {
    if (raw.disabled !== true) report.error(`${path}.disabled`, 'must be true when set');
    return { disabled: true, context };
  }
  if (typeof raw.name === 'string' && raw.name !== '') return { name: raw.name, context };
  if (raw.source_code !== undefined) {
    const code = sourceText(objectOf(raw.source_code), `${path}.source_code`, report);
    if (code === undefined) return { disabled: true, context };
    const errors = syntaxErrors([{ name: 'source_code', code }]);
    if (typeof errors !== 'string' && errors[0] != null)
      report.error(`${path}.source_code`, `the script does not compile: ${errors[0]}`);
    else warnAbsentCalls(code, `${path}.source_code`, report);
    return { code, context };
  }
  // A context alone runs the filter's default script with it, as the reference's.
  if (raw.filter_context !== undefined) return { main: true, context };
  report.error(path, 'needs one of disabled, name, source_code, filter_context', 'missing');
  return { disabled: true, context };
}
