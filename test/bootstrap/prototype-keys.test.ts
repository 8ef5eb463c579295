/**
 * Issue 11 finding 6: keys named like Object.prototype members (`toString`, `__proto__`,
 * `constructor`, ...) anywhere in a bootstrap are unknown fields reported with the file and
 * the field path, in every format, never a TypeError; as map keys and Struct fields they
 * are plain entries.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import type { JsonObject } from '../../events/index.js';
import { bootstrapOf, type Dump, errorsOf, load } from '../helpers/bootstrap.js';

const dir = mkdtempSync(join(tmpdir(), 'bootstrap-proto-keys-'));
after(() => rmSync(dir, { recursive: true, force: true }));

const KEYS = [
  'toString',
  '__proto__',
  'constructor',
  'valueOf',
  'hasOwnProperty',
  'isPrototypeOf',
  '__defineGetter__',
];
const HCM =
  'type.googleapis.com/envoy.config.filter.network.http_connection_manager.v2.HttpConnectionManager';

/** A valid bootstrap; `extra` is spliced in at `where` (a path of keys and indexes). */
function bootstrap(where: Array<string | number>, key: string): JsonObject {
  const config: Dump = {
    static_resources: {
      clusters: [
        {
          name: 'c',
          connect_timeout: '1s',
          load_assignment: {
            cluster_name: 'c',
            endpoints: [
              {
                lb_endpoints: [
                  { endpoint: { address: { socket_address: { address: '127.0.0.1', port_value: 1 } } } },
                ],
              },
            ],
          },
        },
      ],
      listeners: [
        {
          name: 'l',
          address: { socket_address: { address: '127.0.0.1', port_value: 0 } },
          filter_chains: [
            {
              filters: [
                {
                  name: 'envoy.http_connection_manager',
                  typed_config: {
                    '@type': HCM,
                    stat_prefix: 's',
                    route_config: {
                      virtual_hosts: [
                        {
                          name: 'v',
                          domains: ['*'],
                          routes: [{ match: { prefix: '/' }, route: { cluster: 'c' } }],
                        },
                      ],
                    },
                    http_filters: [{ name: 'envoy.router' }],
                  },
                },
              ],
            },
          ],
        },
      ],
    },
  };
  let at = config;
  for (const step of where) at = at[step];
  Object.defineProperty(at, key, { value: { x: 1 }, enumerable: true, writable: true, configurable: true });
  return config;
}

const PLACES: Array<{ where: Array<string | number>; path: string }> = [
  { where: [], path: '' },
  { where: ['static_resources', 'clusters', 0], path: 'static_resources.clusters[0]' },
  {
    where: ['static_resources', 'listeners', 0, 'filter_chains', 0, 'filters', 0, 'typed_config'],
    path: 'static_resources.listeners[0].filter_chains[0].filters[0].typed_config',
  },
  {
    where: [
      'static_resources',
      'listeners',
      0,
      'filter_chains',
      0,
      'filters',
      0,
      'typed_config',
      'route_config',
      'virtual_hosts',
      0,
      'routes',
      0,
      'match',
    ],
    path: 'static_resources.listeners[0].filter_chains[0].filters[0].typed_config.route_config.virtual_hosts[0].routes[0].match',
  },
];

function literal(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/** YAML flow style is JSON; a YAML file of the JSON text takes the YAML parser's path. */
function write(name: string, config: JsonObject): string {
  const path = join(dir, name);
  writeFileSync(path, JSON.stringify(config, null, 1));
  return path;
}

describe('prototype-named keys in JSON and YAML', () => {
  for (const key of KEYS) {
    it(`'${key}' is an unknown field wherever it appears, naming the file and the path`, () => {
      for (const [i, place] of PLACES.entries()) {
        for (const ext of ['json', 'yaml']) {
          const config = bootstrap(place.where, key);
          const file = write(`${key}-${i}.${ext}`, config);
          const errors = errorsOf(load({ configPath: file }));
          const fieldPath = place.path ? `${place.path}.${key}` : key;
          assert.ok(
            errors.some((e) =>
              new RegExp(`^${literal(file)}: ${literal(fieldPath)}: unknown field '${literal(key)}'`).test(e),
            ),
            `${ext} at ${fieldPath}:\n${errors.join('\n')}`,
          );
          const viaYaml = errorsOf(load({ configYaml: JSON.stringify(config) }));
          assert.ok(
            viaYaml.some((e) => e.startsWith(`--config-yaml: ${fieldPath}: unknown field`)),
            viaYaml.join('\n'),
          );
        }
      }
    });
  }

  it('with --allow-unknown-static-fields they warn, count and load', () => {
    const config = bootstrap(['static_resources', 'clusters', 0], '__proto__');
    Object.defineProperty(config, 'toString', { value: 1, enumerable: true });
    const result = load({ configPath: write('allowed.json', config), allowUnknownStaticFields: true });
    assert.ok(result.ok, result.ok ? '' : result.errors.join('\n'));
    assert.equal(result.unknownFields, 2);
    assert.equal(Object.getPrototypeOf(result.bootstrap), Object.prototype);
  });
});

describe('prototype-named keys in text proto', () => {
  for (const key of KEYS) {
    it(`'${key}' is a parse error naming the file, the message and the line`, () => {
      const file = join(dir, `${key}.pb_text`);
      writeFileSync(file, `static_resources {\n  clusters {\n    name: "c"\n    ${key} { }\n  }\n}\n`);
      const [error, ...rest] = errorsOf(load({ configPath: file }));
      assert.deepEqual(rest, []);
      assert.match(
        error!,
        new RegExp(`^${literal(file)}: text proto3 parse error: .*Cluster.*'${literal(key)}'.*line 4`),
      );
    });
  }
});

describe('prototype-named map keys and Struct fields are plain entries', () => {
  it('in a Struct (node.metadata), from JSON and YAML', () => {
    for (const ext of ['json', 'yaml']) {
      const file = join(dir, `metadata.${ext}`);
      writeFileSync(
        file,
        '{"node": {"id": "n", "metadata": {"__proto__": {"polluted": 1}, "toString": "t", "constructor": []}}}',
      );
      const node = bootstrapOf(load({ configPath: file })).node as Dump;
      assert.deepEqual(Object.keys(node.metadata), ['__proto__', 'toString', 'constructor']);
      assert.deepEqual(Object.getOwnPropertyDescriptor(node.metadata, '__proto__')?.value, { polluted: 1 });
      assert.equal(node.metadata.polluted, undefined, 'the prototype is untouched');
      assert.equal(({} as Dump).polluted, undefined);
    }
  });

  it('a cluster named __proto__ loads as a cluster', () => {
    const config = bootstrap([], 'ignored');
    delete (config as Dump).ignored;
    const clusters = (config as Dump).static_resources.clusters;
    clusters.push({ ...clusters[0], name: '__proto__' }, { ...clusters[0], name: 'constructor' });
    const loaded = bootstrapOf(load({ configPath: write('named.json', config) })) as Dump;
    assert.deepEqual(
      loaded.static_resources.clusters.map((c: Dump) => c.name),
      ['c', '__proto__', 'constructor'],
    );
  });
});
