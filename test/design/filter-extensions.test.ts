/**
 * Filters as extensions (docs/http-filters.md, "Adding a filter"): adding a filter touches its
 * own file or folder next to its registry and one line of that registry, for HTTP, network and
 * listener filters alike. Three things would make a filter need a second file, and each fails
 * here: a module outside the filter importing it (a second list of filters, a switch over them),
 * a module outside it spelling one of its names or config messages, and a loader that learns of
 * filters from anywhere but the three registries. Code one filter shares with another is the
 * exception, listed below with why; the list only shrinks.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { describe, it } from 'node:test';
import {
  EXTENSION_TYPE_ALIASES,
  EXTENSIONS,
  extensionForType,
  findExtension,
} from '../../src/bootstrap/catalog.js';
import type { ExtensionCategory, ExtensionIdentity } from '../../src/bootstrap/extensions.js';
import { canonicalTypeName, messageType } from '../../src/bootstrap/schema.js';
import { HTTP_FILTER_FACTORIES } from '../../src/dataplane/http/filters/registry.js';
import { LISTENER_FILTER_FACTORIES } from '../../src/dataplane/listeners/filters/registry.js';
import { NETWORK_FILTER_FACTORIES } from '../../src/dataplane/network-filters/registry.js';
import { importGraph, ROOT } from '../helpers/import-graph.js';

const REGISTRIES: ReadonlyArray<{
  file: string;
  category: ExtensionCategory;
  factories: readonly ExtensionIdentity[];
}> = [
  {
    file: 'src/dataplane/http/filters/registry.ts',
    category: 'envoy.filters.http',
    factories: HTTP_FILTER_FACTORIES,
  },
  {
    file: 'src/dataplane/network-filters/registry.ts',
    category: 'envoy.filters.network',
    factories: NETWORK_FILTER_FACTORIES,
  },
  {
    file: 'src/dataplane/listeners/filters/registry.ts',
    category: 'envoy.filters.listener',
    factories: LISTENER_FILTER_FACTORIES,
  },
];

/**
 * Imports of a filter's module from outside it, as `importer -> module` (the importer a file,
 * or a filter's file or folder), each with why it is
 * not part of adding a filter: code the filter shares with another, or a place the
 * reference's own route or connection manager reads it.
 */
const SHARED: Record<string, string> = {
  'src/dataplane/http/per-filter.ts -> src/dataplane/http/filters/cors.ts':
    "a route's CORS override fills the route's own policy, which the connection manager applies",
  'src/dataplane/http/per-filter.ts -> src/dataplane/http/filters/csrf.ts':
    "a route's CSRF override fills the route's own policy, which the connection manager applies",
  'src/dataplane/http/filters.ts -> src/dataplane/http/filters/router/index.ts':
    'the router ends every chain; the connection manager adds it when the chain does not',
  'src/dataplane/http/exchange.ts -> src/dataplane/http/filters/router/route.ts':
    "the stream asks the router's route choice before the filters run (upgrades, CORS)",
  'src/dataplane/http/upgrade-filters.ts -> src/dataplane/http/filters/router/route.ts':
    "an upgrade's filters choose the route as the router does",
  'src/dataplane/router/route-fields.ts -> src/dataplane/http/filters/ratelimit/route-policy.ts':
    "`rate_limits` is a route's and a virtual host's own field, read by the rate limit filters",
  'src/dataplane/router/table.ts -> src/dataplane/http/filters/ratelimit/route-policy.ts':
    "`rate_limits` is a route's and a virtual host's own field, read by the rate limit filters",
  'src/dataplane/http/filters/local-ratelimit/ -> src/dataplane/http/filters/ext-authz/config.ts':
    'the HTTP status enum, read as ext_authz reads it',
  'src/dataplane/http/filters/local-ratelimit/ -> src/dataplane/http/filters/ratelimit/route-policy.ts':
    "a route's `rate_limits` actions make the local filter's descriptors as they make the rate limit service's",
  'src/dataplane/network-filters/ext-authz/ -> src/dataplane/http/filters/ext-authz/check.ts':
    "the network filter asks the HTTP filter's authorization client",
  'src/dataplane/network-filters/ext-authz/ -> src/dataplane/http/filters/ext-authz/config.ts':
    "the network filter compiles the HTTP filter's service settings",
  'src/dataplane/network-filters/rbac.ts -> src/dataplane/http/filters/rbac/engine.ts':
    "the network filter runs the HTTP filter's policy engine",
  'src/dataplane/network-filters/rbac.ts -> src/dataplane/http/filters/rbac/matcher.ts':
    "the network filter compiles the HTTP filter's matcher tree, over the connection's inputs",
  'src/dataplane/http/filters/local-ratelimit/ -> src/dataplane/network-filters/local-ratelimit/bucket.ts':
    "the HTTP filter's token bucket is the network filter's",
};

/**
 * Spellings of a filter's names or messages outside it, as `file: spelling`, with why: the
 * HCM's config message is how the listener and route compile steps find a chain's routes.
 */
const SPELLED: Record<string, string> = {
  'src/bootstrap/extensions.ts: envoy.config.filter.network.http_connection_manager.v2.HttpConnectionManager':
    "CONFIG_TYPE.httpConnectionManager: the config compile steps (RDS names, route clusters) find a chain's routes by it",
};

/** A registered filter: its registry, the file or folder that holds it (`<dir>/x.ts`, `<dir>/x/`), its identity. */
interface Registered {
  registry: string;
  unit: string;
  identity: ExtensionIdentity;
}

/** Each registry's factories, by the file or folder of the module that exports them. */
function registered(): Registered[] {
  return REGISTRIES.flatMap(({ file, factories }) => {
    const text = readFileSync(join(ROOT, file), 'utf8');
    const moduleOf = new Map<string, string>();
    for (const m of text.matchAll(/import\s*\{([^}]*)\}\s*from\s*'(\.\/[^']+)'/g))
      for (const name of (m[1] ?? '').split(',')) moduleOf.set(name.trim(), m[2] ?? '');
    const names = [...text.matchAll(/registered\((\w+)\)/g)].map((m) => m[1] ?? '');
    assert.equal(names.length, factories.length, `${file}: one registered(...) line per factory`);
    return names.map((name, i) => {
      const spec = moduleOf.get(name);
      assert.ok(spec, `${file}: ${name} is imported from a module next to the registry`);
      const inside = spec.slice(2).replace(/\.js$/, '.ts');
      const unit = `${dirname(file)}/${inside.includes('/') ? `${inside.split('/')[0]}/` : inside}`;
      return { registry: file, unit, identity: factories[i] as ExtensionIdentity };
    });
  });
}

const inUnit = (file: string, unit: string) => (unit.endsWith('/') ? file.startsWith(unit) : file === unit);

/** Source text without comments, which may name filters freely. */
const code = (file: string) =>
  readFileSync(join(ROOT, file), 'utf8')
    .replace(/\/\*[\s\S]*?\*\//g, '')
    .replace(/^\s*\/\/.*$/gm, '');

describe('a filter is its own file or folder plus one registry line', () => {
  const filters = registered();
  const graph = importGraph();

  it('each registered factory lives in its own file or folder next to its registry', () => {
    const units = filters.map((f) => f.unit);
    // Two factories may share a folder only when they are one extension family (gRPC bridge and gRPC-Web).
    const families = new Set(['src/dataplane/http/filters/grpc/']);
    assert.deepEqual(
      units.filter((u, i) => units.indexOf(u) !== i && !families.has(u)),
      [],
    );
  });

  it('nothing outside a filter imports it but its registry and the code it shares', () => {
    const found: string[] = [];
    for (const [importer, targets] of graph)
      for (const target of targets) {
        const owner = filters.find((f) => inUnit(target, f.unit));
        if (owner === undefined || inUnit(importer, owner.unit) || importer === owner.registry) continue;
        // A filter importing another is one sharing, whichever of its modules imports it.
        const from = filters.find((f) => inUnit(importer, f.unit))?.unit ?? importer;
        if (!found.includes(`${from} -> ${target}`)) found.push(`${from} -> ${target}`);
      }
    const unlisted = found.filter((edge) => !(edge in SHARED));
    assert.deepEqual(
      unlisted,
      [],
      'a filter imported from outside needs more than its folder and one registry line',
    );
    const gone = Object.keys(SHARED).filter((edge) => !found.includes(edge));
    assert.deepEqual(gone, [], 'these sharings are gone: take them off SHARED');
  });

  it('nothing outside a filter spells its names or its config messages', () => {
    const found: string[] = [];
    for (const file of graph.keys()) {
      const text = code(file);
      const own = filters.filter((f) => inUnit(file, f.unit)).flatMap((f) => spellings(f.identity));
      for (const f of filters) {
        if (inUnit(file, f.unit)) continue;
        for (const spelling of spellings(f.identity))
          if (!own.includes(spelling) && [`'`, `"`, '`'].some((q) => text.includes(`${q}${spelling}${q}`)))
            found.push(`${file}: ${spelling}`);
      }
    }
    assert.deepEqual(
      found.filter((at) => !(at in SPELLED)),
      [],
      'a filter spelled outside its folder is a second place to edit when adding one',
    );
    assert.deepEqual(
      Object.keys(SPELLED).filter((at) => !found.includes(at)),
      [],
      'these spellings are gone: take them off SPELLED',
    );
  });

  it('the loader knows the filters from the three registries alone, each by all its names and messages', () => {
    for (const { category, factories } of REGISTRIES) {
      assert.deepEqual(
        EXTENSIONS.filter((e) => e.category === category).map((e) => e.name),
        factories.map((f) => f.name),
        `${category}: the catalog's filters are the registry's`,
      );
      for (const f of factories) {
        for (const name of [f.name, ...(f.aliases ?? [])])
          for (const spelling of [name, name.replace(/^envoy\./, 'proxy.')])
            assert.equal(findExtension(category, spelling)?.name, f.name, `${category} finds '${spelling}'`);
        assert.equal(extensionForType(category, f.configType)?.name, f.name);
        for (const message of [f.configType, f.perRouteType].filter((t) => t !== undefined))
          assert.ok(messageType(message), `the loader's schema holds ${message}`);
        for (const [alias, target] of Object.entries(f.typeAliases ?? {})) {
          assert.equal(EXTENSION_TYPE_ALIASES.get(alias), target);
          assert.equal(canonicalTypeName(`type.googleapis.com/${alias}`), target);
        }
      }
    }
  });
});

/** The names and message names a filter is known by, as the reference writes them. */
function spellings(f: ExtensionIdentity): string[] {
  return [f.name, ...(f.aliases ?? []), f.configType, ...(f.perRouteType ? [f.perRouteType] : [])];
}
