import type { ApiVersion, JsonObject, RawBootstrap } from '../../events/index.js';
import type { Options } from '../options.js';
import { checkLogFormatOption } from './application-log.js';
import { canonicalMessage } from './canonical.js';
import { disabledExtensions } from './catalog.js';
import { unknownField } from './field-lookup.js';
import { mergeCanonical } from './merge.js';
import { nestedTooDeep, TOO_DEEP } from './nesting.js';
import { type ConfigError, Report } from './report.js';
import { BOOTSTRAP_TYPE, messageType } from './schema.js';
import { type Parsed, parseYamlText, readConfigFile } from './sources.js';
import { nameListeners, validateBootstrap } from './validate.js';
import type { WalkContext } from './walk-context.js';

/**
 * The loaded bootstrap in canonical form (`events/config.ts`) with what loading found, or
 * every error (each naming its source and field path). `unknownFields` counts unknown
 * fields let through by `--allow-unknown-static-fields` (stat `server.static_unknown_fields`).
 */
export type LoadResult =
  | {
      ok: true;
      bootstrap: RawBootstrap;
      /** The version the bootstrap was written in, for `/config_dump` to show it in (`apiVersionOf`). */
      apiVersion: ApiVersion;
      sources: string[];
      warnings: string[];
      unknownFields: number;
    }
  | { ok: false; errors: string[]; warnings: string[] };

/** The options the loader reads; the rest of `Options` is ignored. */
export type LoadOptions = Pick<
  Options,
  'configPath' | 'configYaml' | 'allowUnknownStaticFields' | 'disableExtensions'
> &
  Partial<Pick<Options, 'logFormat'>>;

/** Label `--config-yaml` findings carry in place of a file name. */
const CONFIG_YAML_LABEL = '--config-yaml';

/**
 * Reads, then runs the compile step of every static resource (`validateBootstrap`): what
 * `--mode validate` checks and what serve starts from. Never throws on bad input.
 */
export function loadBootstrap(options: LoadOptions): LoadResult {
  const read = decode(options);
  if (!read.bootstrap) return { ok: false, errors: read.errors, warnings: read.warnings };
  // The compile steps run even after field errors, so one pass reports every problem.
  const compiled = new Report(read.sources.join(' + '));
  validateBootstrap(read.bootstrap, compiled);
  checkLogFormatOption(read.bootstrap, options.logFormat, compiled);
  const merged = asWritten(compiled, read.written, read.refused);
  return result({
    ...read,
    errors: [...read.errors, ...merged.errors],
    warnings: [...read.warnings, ...merged.warnings],
  });
}

/**
 * The compile findings with their paths as the input wrote them: a filter's config given as
 * the deprecated `config` Struct is named `config`, not the `typed_config` the loader made of
 * it; findings under a config the loader already refused are dropped, being only its echo.
 */
function asWritten(
  report: Report,
  written: ReadonlyMap<string, string>,
  refused: ReadonlySet<string>,
): Report {
  // Outer configs first: an inner `config` was recorded below its ancestors' written paths.
  const moves = [...written].sort(([a], [b]) => a.length - b.length);
  const out = new Report(report.label);
  const place = (problems: ConfigError[], into: ConfigError[]) => {
    for (const problem of problems) {
      let path = problem.path;
      for (const [canonical, input] of moves)
        if (isUnder(path, canonical)) path = input + path.slice(canonical.length);
      if (![...refused].some((r) => isUnder(path, r))) into.push({ ...problem, path });
    }
  };
  place(report.problems, out.problems);
  place(report.warningProblems, out.warningProblems);
  return out;
}

function isUnder(path: string, prefix: string): boolean {
  return path === prefix || path.startsWith(`${prefix}.`) || path.startsWith(`${prefix}[`);
}

/**
 * Reads `-c/--config-path` (format by extension) and/or `--config-yaml`, converts each to
 * the canonical form and merges the YAML over the file (protobuf merge semantics), without
 * compiling the resources: the decoding half of `loadBootstrap`.
 */
export function readBootstrap(options: LoadOptions): LoadResult {
  return result(decode(options));
}

interface Decoded {
  bootstrap?: JsonObject;
  apiVersion: ApiVersion;
  /** `typed_config` paths made from a deprecated `config`, and refused configs (WalkContext). */
  written: Map<string, string>;
  refused: Set<string>;
  sources: string[];
  errors: string[];
  warnings: string[];
  unknownFields: number;
}

function result(d: Decoded): LoadResult {
  if (!d.bootstrap || d.errors.length > 0) return { ok: false, errors: d.errors, warnings: d.warnings };
  const { bootstrap, apiVersion, sources, warnings, unknownFields } = d;
  return { ok: true, bootstrap, apiVersion, sources, warnings, unknownFields };
}

function decode(options: LoadOptions): Decoded {
  const { disabled, warnings: disableWarnings } = disabledExtensions(options.disableExtensions ?? []);
  const written = new Map<string, string>();
  const refused = new Set<string>();
  const inputs: Array<{ label: string; parsed: Parsed }> = [];
  if (options.configPath)
    inputs.push({ label: options.configPath, parsed: readConfigFile(options.configPath) });
  if (options.configYaml) {
    inputs.push({ label: CONFIG_YAML_LABEL, parsed: parseYamlText(options.configYaml, CONFIG_YAML_LABEL) });
  }
  if (inputs.length === 0) {
    const errors = ['no bootstrap: give -c/--config-path <file> or --config-yaml <yaml>'];
    return {
      sources: [],
      errors,
      warnings: disableWarnings,
      unknownFields: 0,
      written,
      refused,
      apiVersion: 'V2',
    };
  }
  const type = messageType(BOOTSTRAP_TYPE);
  const errors: string[] = [];
  const warnings = [...disableWarnings];
  let unknownFields = 0;
  let bootstrap: JsonObject | undefined;
  const seen = { v2: false, v3: false };
  for (const { label, parsed } of inputs) {
    if (!parsed.ok) {
      errors.push(parsed.error);
      continue;
    }
    const report = new Report(label);
    const deep = nestedTooDeep(parsed.json);
    if (deep !== null) {
      report.error(deep, TOO_DEEP);
      errors.push(...report.errors);
      continue;
    }
    const ctx: WalkContext = {
      report,
      allowUnknown: options.allowUnknownStaticFields,
      disabled,
      written,
      refused,
      seen,
    };
    const canonical = canonicalMessage(parsed.json, type, '', ctx) ?? {};
    for (const u of parsed.unknownWire ?? [])
      unknownField(ctx, u.path ? `${u.path}.${u.key}` : u.key, u.key, u.type);
    errors.push(...report.errors);
    warnings.push(...report.warnings);
    unknownFields += report.unknownFields;
    bootstrap = bootstrap ? mergeCanonical(bootstrap, canonical, type) : canonical;
  }
  const sources = inputs.map((i) => i.label);
  const apiVersion = apiVersionOf(seen);
  if (!bootstrap || inputs.some((i) => !i.parsed.ok))
    return { sources, errors, warnings, unknownFields, written, refused, apiVersion };
  nameListeners(bootstrap);
  return { bootstrap, apiVersion, sources, errors, warnings, unknownFields, written, refused };
}

/**
 * A bootstrap (its file and `--config-yaml` together) came in as v3 when it showed v3 (a v3
 * type URL or field spelling) and nothing only v2 has (a v2 type URL, a field v3 removed, a
 * filter's `config` Struct); one showing neither or both is v2, the form the loader keeps.
 */
function apiVersionOf(seen: { v2: boolean; v3: boolean }): ApiVersion {
  return seen.v3 && !seen.v2 ? 'V3' : 'V2';
}
