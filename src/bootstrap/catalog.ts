/**
 * The registry of every extension of this build: the built-in ones (extensions.ts) and the
 * HTTP filters, each named by its own factory (src/dataplane/http/filters/registry.ts). The
 * loader resolves names, type URLs and schemas through this, so adding an HTTP filter adds it
 * here with no edit to this file.
 */
import { HTTP_FILTER_FACTORIES } from '../dataplane/http/filters/registry.js';
import { BUILT_IN_EXTENSIONS, type Extension, type ExtensionCategory, envoyName } from './extensions.js';

const HTTP_FILTERS: readonly Extension[] = HTTP_FILTER_FACTORIES.map((f) => ({
  category: 'envoy.filters.http',
  name: f.name,
  aliases: [f.name, ...(f.aliases ?? [])],
  configType: f.configType,
}));

/** Every extension of this build. */
export const EXTENSIONS: readonly Extension[] = [...BUILT_IN_EXTENSIONS, ...HTTP_FILTERS];

/** The other full names (v3, v2alpha) the extensions give their messages, each to the message this build reads. */
export const EXTENSION_TYPE_ALIASES: ReadonlyMap<string, string> = new Map(
  HTTP_FILTER_FACTORIES.flatMap((f) => Object.entries(f.typeAliases ?? {})),
);

/** The extensions' own schemas: files under `proto/`, and proto3 sources they carry. */
export const EXTENSION_SCHEMAS = {
  files: HTTP_FILTER_FACTORIES.flatMap((f) => ('file' in f.schema ? [f.schema.file] : [])),
  sources: HTTP_FILTER_FACTORIES.flatMap((f) => ('source' in f.schema ? [f.schema.source] : [])),
};

/** The extension a config names within a category, by any of its spellings. */
export function findExtension(category: ExtensionCategory, name: string): Extension | undefined {
  const wanted = envoyName(name);
  return EXTENSIONS.find((e) => e.category === category && e.aliases.includes(wanted));
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
