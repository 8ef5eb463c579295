/**
 * The registry of every extension of this build: the built-in ones (extensions.ts) and the
 * filters, each named by its factory in its category's registry
 * (src/dataplane/http/filters/registry.ts, src/dataplane/network-filters/registry.ts,
 * src/dataplane/listeners/filters/registry.ts). The loader resolves names, type URLs and
 * schemas through this, so adding a filter adds it here with no edit to this file.
 */
import { HTTP_FILTER_FACTORIES } from '../dataplane/http/filters/registry.js';
import { LISTENER_FILTER_FACTORIES } from '../dataplane/listeners/filters/registry.js';
import { NETWORK_FILTER_FACTORIES } from '../dataplane/network-filters/registry.js';
import {
  answersTo,
  BUILT_IN_EXTENSIONS,
  type Extension,
  type ExtensionCategory,
  type ExtensionIdentity,
  envoyName,
} from './extensions.js';

/** Every filter of this build by its category. */
const FILTERS: ReadonlyArray<[ExtensionCategory, readonly ExtensionIdentity[]]> = [
  ['envoy.filters.network', NETWORK_FILTER_FACTORIES],
  ['envoy.filters.http', HTTP_FILTER_FACTORIES],
  ['envoy.filters.listener', LISTENER_FILTER_FACTORIES],
];
const IDENTITIES = FILTERS.flatMap(([, list]) => list);

/** Every extension of this build. */
export const EXTENSIONS: readonly Extension[] = [
  ...FILTERS.flatMap(([category, list]) =>
    list.map((f) => ({
      category,
      name: f.name,
      aliases: [f.name, ...(f.aliases ?? [])],
      configType: f.configType,
      ...(f.perRouteType === undefined ? {} : { perRouteType: f.perRouteType }),
    })),
  ),
  ...BUILT_IN_EXTENSIONS,
];

/** The other full names (v3, v2alpha) the extensions give their messages, each to the message this build reads. */
export const EXTENSION_TYPE_ALIASES: ReadonlyMap<string, string> = new Map(
  IDENTITIES.flatMap((f) => Object.entries(f.typeAliases ?? {})),
);

/** The extensions' own schemas: files under `proto/`, and proto3 sources they carry. */
export const EXTENSION_SCHEMAS = {
  files: [...new Set(IDENTITIES.flatMap((f) => ('file' in f.schema ? [f.schema.file].flat() : [])))],
  sources: [...new Set(IDENTITIES.flatMap((f) => ('source' in f.schema ? [f.schema.source].flat() : [])))],
};

/** The extension a config names within a category, by any of its spellings. */
export function findExtension(category: ExtensionCategory, name: string): Extension | undefined {
  return EXTENSIONS.find((e) => e.category === category && answersTo(e, name));
}

/** The extension whose config message is `configType` within a category. */
export function extensionForType(category: ExtensionCategory, configType: string): Extension | undefined {
  return EXTENSIONS.find((e) => e.category === category && e.configType === configType);
}

/**
 * Resolves `--disable-extensions` entries (`<category>/<name>`) to extension identities
 * (`category/long-name`). Entries naming nothing this build has come back as warnings.
 */
export function disabledExtensions(entries: readonly string[]): {
  disabled: Set<string>;
  warnings: string[];
} {
  const disabled = new Set<string>();
  const warnings: string[] = [];
  for (const entry of entries) {
    const slash = entry.lastIndexOf('/');
    const category = envoyName(entry.slice(0, slash)) as ExtensionCategory;
    const found = slash > 0 ? findExtension(category, entry.slice(slash + 1)) : undefined;
    if (found) disabled.add(`${found.category}/${found.name}`);
    else
      warnings.push(
        `--disable-extensions: '${entry}' names no extension of this build ` +
          `(write <category>/<name>, e.g. envoy.filters.network/envoy.tcp_proxy)`,
      );
  }
  return { disabled, warnings };
}
