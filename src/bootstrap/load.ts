import type { JsonObject, RawBootstrap } from '../../events/index.js';
import type { Options } from '../cli/options.js';
import { canonicalMessage, type WalkContext } from './canonical.js';
import { disabledExtensions } from './extensions.js';
import { mergeCanonical } from './merge.js';
import { Report } from './report.js';
import { BOOTSTRAP_TYPE, messageType } from './schema.js';
import { type Parsed, parseYamlText, readConfigFile } from './sources.js';
import { nameListeners, validateBootstrap } from './validate.js';

/**
 * The loaded bootstrap in canonical form (`events/config.ts`) with what loading found, or
 * every error (each naming its source and field path). `unknownFields` counts unknown
 * fields let through by `--allow-unknown-static-fields` (stat `server.static_unknown_fields`).
 */
export type LoadResult =
  | { ok: true; bootstrap: RawBootstrap; sources: string[]; warnings: string[]; unknownFields: number }
  | { ok: false; errors: string[]; warnings: string[] };

/** The options the loader reads; the rest of `Options` is ignored. */
export type LoadOptions = Pick<
  Options,
  'configPath' | 'configYaml' | 'allowUnknownStaticFields' | 'disableExtensions'
>;

/** Label `--config-yaml` findings carry in place of a file name. */
export const CONFIG_YAML_LABEL = '--config-yaml';

/**
 * Reads, then runs the compile step of every static resource (`validateBootstrap`): what
 * `--mode validate` checks and what serve starts from. Never throws on bad input.
 */
export function loadBootstrap(options: LoadOptions): LoadResult {
  const read = decode(options);
  if (!read.bootstrap) return { ok: false, errors: read.errors, warnings: read.warnings };
  // The compile steps run even after field errors, so one pass reports every problem.
  const merged = new Report(read.sources.join(' + '));
  validateBootstrap(read.bootstrap, merged);
  return result({
    ...read,
    errors: [...read.errors, ...merged.errors],
    warnings: [...read.warnings, ...merged.warnings],
  });
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
  sources: string[];
  errors: string[];
  warnings: string[];
  unknownFields: number;
}

function result(d: Decoded): LoadResult {
  if (!d.bootstrap || d.errors.length > 0) return { ok: false, errors: d.errors, warnings: d.warnings };
  const { bootstrap, sources, warnings, unknownFields } = d;
  return { ok: true, bootstrap, sources, warnings, unknownFields };
}

function decode(options: LoadOptions): Decoded {
  const { disabled, warnings: disableWarnings } = disabledExtensions(options.disableExtensions ?? []);
  const inputs: Array<{ label: string; parsed: Parsed }> = [];
  if (options.configPath)
    inputs.push({ label: options.configPath, parsed: readConfigFile(options.configPath) });
  if (options.configYaml) {
    inputs.push({ label: CONFIG_YAML_LABEL, parsed: parseYamlText(options.configYaml, CONFIG_YAML_LABEL) });
  }
  if (inputs.length === 0) {
    const errors = ['no bootstrap: give -c/--config-path <file> or --config-yaml <yaml>'];
    return { sources: [], errors, warnings: disableWarnings, unknownFields: 0 };
  }
  const type = messageType(BOOTSTRAP_TYPE);
  const errors: string[] = [];
  const warnings = [...disableWarnings];
  let unknownFields = 0;
  let bootstrap: JsonObject | undefined;
  for (const { label, parsed } of inputs) {
    if (!parsed.ok) {
      errors.push(parsed.error);
      continue;
    }
    const report = new Report(label);
    const ctx: WalkContext = { report, allowUnknown: options.allowUnknownStaticFields, disabled };
    const canonical = canonicalMessage(parsed.json, type, '', ctx) ?? {};
    errors.push(...report.errors);
    warnings.push(...report.warnings);
    unknownFields += report.unknownFields;
    bootstrap = bootstrap ? mergeCanonical(bootstrap, canonical, type) : canonical;
  }
  const sources = inputs.map((i) => i.label);
  if (!bootstrap || inputs.some((i) => !i.parsed.ok)) return { sources, errors, warnings, unknownFields };
  nameListeners(bootstrap);
  return { bootstrap, sources, errors, warnings, unknownFields };
}
