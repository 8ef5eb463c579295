import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { Report } from '../../../../../src/bootstrap/report.js';
import { compileLua, compileLuaPerRoute } from '../../../../../src/dataplane/http/filters/lua/config.js';
import { errorsOf, loadYaml } from '../../../../helpers/bootstrap.js';

function paths(compile: (raw: never, path: string, report: Report) => unknown, raw: unknown): string[] {
  const report = new Report('t');
  compile(raw as never, 'f', report);
  return report.problems.map((p) => p.path).sort();
}

/** A bootstrap whose one HCM runs `filter` then the router. */
function withFilter(filter: string): string {
  return `static_resources: { listeners: [{ name: l, address: { socket_address: { address: 127.0.0.1, port_value: 0 } }, filter_chains: [{ filters: [{ name: envoy.http_connection_manager, typed_config: { '@type': type.googleapis.com/envoy.config.filter.network.http_connection_manager.v2.HttpConnectionManager, stat_prefix: s, route_config: { virtual_hosts: [{ name: v, domains: ['*'], routes: [{ match: { prefix: / }, direct_response: { status: 200 } }] }] }, http_filters: [${filter}, { name: envoy.router }] } }] }] }] }`;
}

const CODE = `"function envoy_on_request(h) end"`;

/** An empty script file (`/dev/null` is refused, as the reference refuses every path under `/dev`). */
const dir = mkdtempSync(join(tmpdir(), 'proxy-lua-config-'));
const EMPTY = join(dir, 'empty.lua');
writeFileSync(EMPTY, '');
after(() => rmSync(dir, { recursive: true, force: true }));

describe('compileLua', () => {
  it('reads inline_code and source_codes (inline and from a file)', () => {
    const report = new Report('t');
    const config = compileLua(
      {
        inline_code: 'x = 1',
        source_codes: { 'a.lua': { inline_string: 'a = 1' }, 'b.lua': { filename: EMPTY } },
      },
      'f',
      report,
    );
    assert.deepEqual(report.problems, []);
    assert.deepEqual(config.main, { code: 'x = 1', field: 'inline_code' });
    assert.deepEqual(
      [...config.sources],
      [
        ['a.lua', 'a = 1'],
        ['b.lua', ''],
      ],
    );
  });

  it('refuses an unreadable source, an empty source and unknown fields, by name', () => {
    assert.deepEqual(
      paths(compileLua, {
        source_codes: { 'gone.lua': { filename: '/nonexistent/gone.lua' }, 'empty.lua': {} },
        surprise: 1,
      }),
      ['f.source_codes.empty.lua', 'f.source_codes.gone.lua.filename', 'f.surprise'],
    );
  });

  it("reads v3's default_source_code as the default script; refuses it beside inline_code; allows neither", () => {
    const report = new Report('t');
    const config = compileLua({ default_source_code: { filename: EMPTY } }, 'f', report);
    assert.deepEqual(report.problems, []);
    assert.deepEqual(config.main, { code: '', field: 'default_source_code' });
    assert.deepEqual(
      paths(compileLua, { inline_code: 'x = 1', default_source_code: { inline_string: 'y = 1' } }),
      ['f'],
    );
    assert.deepEqual(paths(compileLua, { default_source_code: { filename: '/nonexistent/main.lua' } }), [
      'f.default_source_code.filename',
    ]);
    const none = new Report('t');
    assert.equal(compileLua({}, 'f', none).main, null);
    assert.deepEqual(none.problems, []);
  });

  it("refuses a script that does not compile, naming the field and Lua's message; a good one passes", () => {
    const report = new Report('t');
    compileLua(
      {
        inline_code: 'function envoy_on_request(h)\n  h:headers():add("a", "b"\nend',
        source_codes: { 'ok.lua': { inline_string: 'x = 1' }, 'bad.lua': { inline_string: 'if then' } },
      },
      'f',
      report,
    );
    const found = report.problems.map((p) => `${p.path}: ${p.message}`).sort();
    assert.equal(found.length, 2, found.join('\n'));
    assert.match(
      found[0] ?? '',
      /^f\.inline_code: the script does not compile: inline_code:3: '\)' expected/,
    );
    assert.match(
      found[1] ?? '',
      /^f\.source_codes\.bad\.lua: the script does not compile: source_codes\.bad\.lua:1: unexpected symbol near 'then'/,
    );
  });

  it('reads LuaPerRoute disabled, name, source_code or filter_context; refuses disabled: false, an empty one and a source_code that does not compile', () => {
    assert.deepEqual(compileLuaPerRoute({ disabled: true } as never, 'r', new Report('t')), {
      disabled: true,
      context: {},
    });
    assert.deepEqual(compileLuaPerRoute({ name: 'a.lua' } as never, 'r', new Report('t')), {
      name: 'a.lua',
      context: {},
    });
    // filter_context alone: the default script, with the context.
    assert.deepEqual(compileLuaPerRoute({ filter_context: { k: 'v' } } as never, 'r', new Report('t')), {
      main: true,
      context: { k: 'v' },
    });
    assert.deepEqual(paths(compileLuaPerRoute, { disabled: false }), ['f.disabled']);
    assert.deepEqual(paths(compileLuaPerRoute, {}), ['f']);
    assert.deepEqual(
      compileLuaPerRoute({ source_code: { inline_string: 'x = 1' } } as never, 'r', new Report('t')),
      { code: 'x = 1', context: {} },
    );
    assert.deepEqual(paths(compileLuaPerRoute, { source_code: { inline_string: 'if then' } }), [
      'f.source_code',
    ]);
  });
});

describe('the Lua filter by every name and type URL the reference accepts', () => {
  const spellings = [
    `{ name: envoy.lua, config: { inline_code: ${CODE} } }`,
    `{ name: proxy.lua, config: { inline_code: ${CODE} } }`,
    `{ name: envoy.filters.http.lua, typed_config: { '@type': type.googleapis.com/envoy.config.filter.http.lua.v2.Lua, inline_code: ${CODE} } }`,
    `{ name: proxy.filters.http.lua, typed_config: { '@type': type.googleapis.com/envoy.extensions.filters.http.lua.v3.Lua, inline_code: ${CODE} } }`,
    `{ typed_config: { '@type': type.googleapis.com/envoy.extensions.filters.http.lua.v3.Lua, inline_code: ${CODE} } }`,
    `{ name: envoy.filters.http.lua, typed_config: { '@type': type.googleapis.com/udpa.type.v1.TypedStruct, type_url: type.googleapis.com/envoy.extensions.filters.http.lua.v3.Lua, value: { inline_code: ${CODE} } } }`,
    `{ name: envoy.filters.http.lua, typed_config: { '@type': type.googleapis.com/xds.type.v3.TypedStruct, type_url: type.googleapis.com/envoy.config.filter.http.lua.v2.Lua, value: { inline_code: ${CODE} } } }`,
  ];
  for (const filter of spellings) {
    it(`validates ${filter.slice(0, 110)}`, () => {
      const loaded = loadYaml(withFilter(filter));
      assert.ok(loaded.ok, loaded.ok ? '' : loaded.errors.join('\n'));
    });
  }

  it('names the field inside a TypedStruct value, and a TypedStruct without type_url', () => {
    const bad = errorsOf(
      loadYaml(
        withFilter(
          `{ name: envoy.filters.http.lua, typed_config: { '@type': type.googleapis.com/udpa.type.v1.TypedStruct, type_url: type.googleapis.com/envoy.extensions.filters.http.lua.v3.Lua, value: { inline_code: ${CODE}, bogus: 1 } } }`,
        ),
      ),
    ).join('\n');
    assert.match(bad, /http_filters\[0\]\.typed_config\.value\.bogus: unknown field 'bogus'/);
    const missing = errorsOf(
      loadYaml(
        withFilter(
          `{ name: envoy.filters.http.lua, typed_config: { '@type': type.googleapis.com/udpa.type.v1.TypedStruct, value: {} } }`,
        ),
      ),
    ).join('\n');
    assert.match(missing, /http_filters\[0\]\.typed_config\.type_url: required field missing/);
  });

  it("takes a per-route override keyed by a Lua filter's http_filters name; refuses one of a filter that reads none so", () => {
    const route = `{ match: { prefix: / }, direct_response: { status: 200 }, typed_per_filter_config: { my-lua: { '@type': type.googleapis.com/envoy.extensions.filters.http.lua.v3.LuaPerRoute, source_code: { inline_string: 'x = 1' } }, my-fault: { '@type': type.googleapis.com/envoy.extensions.filters.http.fault.v3.HTTPFault } } }`;
    const yaml = withFilter(`{ name: envoy.lua, config: { inline_code: ${CODE} } }`).replace(
      '{ match: { prefix: / }, direct_response: { status: 200 } }',
      route,
    );
    const errors = errorsOf(loadYaml(yaml)).join('\n');
    assert.doesNotMatch(errors, /my-lua/);
    assert.match(
      errors,
      /typed_per_filter_config\["my-fault"\]: 'my-fault' is not an HTTP filter of this build; a key naming a filter by its http_filters name is implemented for typed_per_filter_config of envoy\.filters\.http\.lua only/,
    );
  });
});
