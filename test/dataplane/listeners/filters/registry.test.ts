/**
 * The listener filter registry: each factory is found by every name the reference accepts
 * (`envoy.filters.listener.*`, the deprecated `envoy.listener.*`, their `proxy.` spellings), by
 * each type URL of its config alone (v2, v3) and inside a `TypedStruct`, and switches on its
 * part of the listener; an unknown one is refused by the path of its entry.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { JsonObject } from '../../../../events/index.js';
import { EXTENSIONS } from '../../../../src/bootstrap/catalog.js';
import { compileListener, type ListenerSpec } from '../../../../src/config/listener.js';
import { socketHelper } from '../../../../src/dataplane/listeners/native.js';
import { LISTENER_FILTER_FACTORIES } from '../../../../src/dataplane/listeners/filters/registry.js';
import { bootstrapOf, type Dump, errorsOf, loadYaml } from '../../../helpers/bootstrap.js';

const TCP = {
  '@type': 'type.googleapis.com/envoy.config.filter.network.tcp_proxy.v2.TcpProxy',
  stat_prefix: 't',
  cluster: 'c',
};

function bootstrap(entry: JsonObject): string {
  return JSON.stringify({
    static_resources: {
      listeners: [
        {
          name: 'l',
          address: { socket_address: { address: '127.0.0.1', port_value: 0 } },
          listener_filters: [entry],
          filter_chains: [{ filters: [{ name: 'envoy.tcp_proxy', typed_config: TCP }] }],
        },
      ],
      clusters: [{ name: 'c', connect_timeout: '1s', load_assignment: { cluster_name: 'c' } }],
    },
  });
}

/** What each filter switches on in the compiled listener. */
const SWITCHES: Record<string, (spec: ListenerSpec) => boolean> = {
  'envoy.filters.listener.tls_inspector': (spec) => spec.tlsInspector,
  'envoy.filters.listener.original_dst': (spec) => spec.restoreOriginalDst,
  'envoy.filters.listener.http_inspector': (spec) => spec.httpInspector,
};

/** original_dst needs the native socket helper; without it, it is refused by name (docs/data-plane.md). */
const helperLoads = typeof socketHelper() !== 'string';

describe('listener filter registry', () => {
  it('holds each filter once, as the loader reads it', () => {
    assert.deepEqual(
      EXTENSIONS.filter((e) => e.category === 'envoy.filters.listener').map((e) => e.name),
      LISTENER_FILTER_FACTORIES.map((f) => f.name),
    );
    for (const f of LISTENER_FILTER_FACTORIES)
      assert.ok(SWITCHES[f.name], `${f.name} has its switch in this test`);
  });

  for (const f of LISTENER_FILTER_FACTORIES) {
    it(`finds ${f.name} by every name and type URL`, {
      skip: f.name.endsWith('original_dst') && !helperLoads,
    }, () => {
      const names = [f.name, ...(f.aliases ?? [])].flatMap((n) => [n, `proxy.${n.slice('envoy.'.length)}`]);
      const urls = [f.configType, ...Object.keys(f.typeAliases ?? {})].map((t) => `type.googleapis.com/${t}`);
      const entries: Array<[string, JsonObject]> = [
        ...names.map((name): [string, JsonObject] => [name, { name }]),
        ...names.map((name): [string, JsonObject] => [`${name} (config)`, { name, config: {} }]),
        ...urls.map((url): [string, JsonObject] => [url, { name: 'mine', typed_config: { '@type': url } }]),
        ...urls.flatMap((url) =>
          ['udpa.type.v1.TypedStruct', 'xds.type.v3.TypedStruct'].map((w): [string, JsonObject] => [
            `${w} of ${url}`,
            { name: 'mine', typed_config: { '@type': `type.googleapis.com/${w}`, type_url: url, value: {} } },
          ]),
        ),
      ];
      assert.ok(
        Object.keys(f.typeAliases ?? {}).some((t) => t.includes('.v3.')),
        `${f.name} has a v3 type URL`,
      );
      for (const [how, entry] of entries) {
        const b = bootstrapOf(loadYaml(bootstrap(entry))) as Dump;
        const listener = b.static_resources.listeners[0];
        assert.equal(
          listener.listener_filters[0].typed_config['@type'],
          `type.googleapis.com/${f.configType}`,
          how,
        );
        const { value, findings } = compileListener(listener, 'l');
        assert.deepEqual(findings.errors, [], how);
        assert.ok(value && SWITCHES[f.name]?.(value), how);
      }
      const other = LISTENER_FILTER_FACTORIES.find((o) => o !== f)?.name ?? '';
      const otherListener = (bootstrapOf(loadYaml(bootstrap({ name: other }))) as Dump).static_resources
        .listeners[0];
      const without = compileListener(otherListener, 'l');
      assert.equal(
        without.value && SWITCHES[f.name]?.(without.value),
        false,
        'another filter does not switch it on',
      );
    });
  }

  it('refuses an unknown listener filter and a field of one by path', () => {
    const at = 'static_resources.listeners[0].listener_filters[0]';
    const unknown = errorsOf(loadYaml(bootstrap({ name: 'envoy.filters.listener.proxy_protocol' })));
    assert.ok(
      unknown.some((e) =>
        e.includes(`${at}.name: unknown extension 'envoy.filters.listener.proxy_protocol'`),
      ),
      unknown.join('\n'),
    );
    const field = errorsOf(
      loadYaml(
        bootstrap({
          name: 'envoy.listener.tls_inspector',
          typed_config: {
            '@type': 'type.googleapis.com/envoy.extensions.filters.listener.tls_inspector.v3.TlsInspector',
            enable_ja3_fingerprinting: true,
          },
        }),
      ),
    );
    assert.ok(
      field.some((e) => e.includes(`${at}.typed_config.enable_ja3_fingerprinting`)),
      field.join('\n'),
    );
  });
});
