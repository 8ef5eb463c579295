/**
 * The extension catalog: every HTTP filter is found by what its factory names (each `envoy.`
 * name and its `proxy.` spelling, each type URL: v2, v2alpha, v3, and a `TypedStruct` naming
 * any of them), with no entry for it elsewhere; and a filter that carries its own proto3 source
 * (CORS) loads like one with a file under proto/.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { EXTENSION_TYPE_ALIASES, EXTENSIONS, findExtension } from '../../src/bootstrap/catalog.js';
import { BUILT_IN_EXTENSIONS } from '../../src/bootstrap/extensions.js';
import { canonicalTypeName, typeForUrl } from '../../src/bootstrap/schema.js';
import { HTTP_FILTER_FACTORIES } from '../../src/dataplane/http/filters/registry.js';
import { bootstrapOf, type Dump, errorsOf, loadYaml } from '../helpers/bootstrap.js';

const ROUTES = `route_config: { virtual_hosts: [{ name: v, domains: ['*'], routes: [{ match: { prefix: / }, direct_response: { status: 200 } }] }] }`;
/** A bootstrap whose one HCM has `filter` before the router. */
const withFilter = (filter: string) =>
  `static_resources: { listeners: [{ name: l, address: { socket_address: { address: 127.0.0.1, port_value: 0 } }, filter_chains: [{ filters: [{ name: envoy.http_connection_manager, typed_config: { "@type": type.googleapis.com/envoy.config.filter.network.http_connection_manager.v2.HttpConnectionManager, stat_prefix: s, ${ROUTES}, http_filters: [${filter}, { name: envoy.router }] } }] }] }] }`;
/** Where the first HTTP filter's `typed_config` is, as a pattern. */
const AT =
  'static_resources.listeners[0].filter_chains[0].filters[0].typed_config.http_filters[0].typed_config'.replace(
    /[[\].]/g,
    '\\$&',
  );

/** The `@type` the loader wrote for the first HTTP filter. */
function firstFilterType(yaml: string): unknown {
  const b = bootstrapOf(loadYaml(yaml)) as Dump;
  return b.static_resources.listeners[0].filter_chains[0].filters[0].typed_config.http_filters[0]
    .typed_config['@type'];
}

describe('extension catalog', () => {
  it('holds each HTTP filter once, from its factory, and nothing of them in the built-in list', () => {
    assert.ok(!BUILT_IN_EXTENSIONS.some((e) => e.category === 'envoy.filters.http'));
    const http = EXTENSIONS.filter((e) => e.category === 'envoy.filters.http');
    assert.deepEqual(
      http.map((e) => e.name),
      HTTP_FILTER_FACTORIES.map((f) => f.name),
    );
    for (const f of HTTP_FILTER_FACTORIES) {
      for (const name of [f.name, ...(f.aliases ?? [])]) {
        assert.equal(findExtension('envoy.filters.http', name)?.configType, f.configType, name);
        const proxy = `proxy.${name.slice('envoy.'.length)}`;
        assert.equal(findExtension('envoy.filters.http', proxy)?.configType, f.configType, proxy);
      }
      // Every message the factory names is in the schema, by each of its names.
      assert.ok(typeForUrl(`type.googleapis.com/${f.configType}`), f.configType);
      for (const [alias, message] of Object.entries(f.typeAliases ?? {})) {
        assert.equal(canonicalTypeName(`type.googleapis.com/${alias}`), message);
        assert.ok(typeForUrl(`type.googleapis.com/${alias}`), alias);
      }
    }
    assert.ok(EXTENSION_TYPE_ALIASES.size >= HTTP_FILTER_FACTORIES.length);
  });

  it('loads a filter by its v3 type URL, its proxy. name, and a TypedStruct (CORS: proto3 source of its own)', () => {
    const v2 = 'type.googleapis.com/envoy.config.filter.http.cors.v2.Cors';
    assert.equal(
      firstFilterType(
        withFilter(
          '{ name: proxy.cors, typed_config: { "@type": type.googleapis.com/envoy.extensions.filters.http.cors.v3.Cors } }',
        ),
      ),
      v2,
    );
    assert.equal(
      firstFilterType(
        withFilter(
          '{ name: envoy.filters.http.cors, typed_config: { "@type": type.googleapis.com/udpa.type.v1.TypedStruct, type_url: type.googleapis.com/envoy.extensions.filters.http.cors.v3.Cors, value: {} } }',
        ),
      ),
      v2,
    );
    const fault = firstFilterType(
      withFilter(
        '{ name: envoy.fault, typed_config: { "@type": type.googleapis.com/xds.type.v3.TypedStruct, type_url: type.googleapis.com/envoy.extensions.filters.http.fault.v3.HTTPFault, value: { max_active_faults: 2 } } }',
      ),
    );
    assert.equal(fault, 'type.googleapis.com/envoy.config.filter.http.fault.v2.HTTPFault');
  });

  it('refuses a malformed TypedStruct naming the field, and unknown fields inside its value by path', () => {
    const typed = (body: string) =>
      errorsOf(
        loadYaml(
          withFilter(
            `{ name: envoy.fault, typed_config: { "@type": type.googleapis.com/udpa.type.v1.TypedStruct, ${body} } }`,
          ),
        ),
      );
    assert.match(typed('value: {}').join('\n'), new RegExp(`${AT}\\.type_url`));
    assert.match(
      typed(
        'type_url: type.googleapis.com/envoy.extensions.filters.http.fault.v3.HTTPFault, value: [1]',
      ).join('\n'),
      new RegExp(`${AT}\\.value`),
    );
    assert.match(
      typed(
        'type_url: type.googleapis.com/envoy.extensions.filters.http.fault.v3.HTTPFault, value: { bogus: 1 }',
      ).join('\n'),
      new RegExp(`${AT}\\.value\\.bogus.*unknown field`),
    );
    assert.match(
      typed('type_url: type.googleapis.com/envoy.extensions.filters.http.fault.v3.HTTPFault, extra: 1').join(
        '\n',
      ),
      new RegExp(`${AT}\\.extra.*TypedStruct`),
    );
    assert.match(
      typed('type_url: type.googleapis.com/no.such.Message').join('\n'),
      /unknown type URL 'type.googleapis.com\/no.such.Message'/,
    );
  });
});
