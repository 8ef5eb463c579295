import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { bootstrapOf, type Dump, errorsOf, fixture, load, read } from '../helpers/bootstrap.js';

const dir = mkdtempSync(join(tmpdir(), 'bootstrap-formats-'));
after(() => rmSync(dir, { recursive: true, force: true }));

function file(name: string, text: string): string {
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
}

describe('bootstrap formats', () => {
  it('loads full.{yaml,json,pb_text,pb} to the identical validated object', () => {
    const loaded = ['yaml', 'json', 'pb_text', 'pb'].map((ext) =>
      bootstrapOf(read({ configPath: fixture(`full.${ext}`) })),
    );
    for (const other of loaded.slice(1)) assert.deepEqual(other, loaded[0]);
    const resources = loaded[0]!.static_resources as { clusters: Array<Record<string, unknown>> };
    assert.deepEqual(
      resources.clusters.map((c) => c.name),
      ['web_rr', 'web_lr', 'web_ring', 'dynamic_eds'],
    );
  });

  it('writes the canonical form: durations, wrappers, 64-bit strings, defaults absent', () => {
    const b = bootstrapOf(read({ configPath: fixture('full.pb') }));
    const clusters = (b.static_resources as { clusters: Array<Record<string, unknown>> }).clusters;
    const ring = clusters[2]!;
    assert.equal(clusters[0]!.connect_timeout, '0.250s');
    assert.deepEqual(ring.ring_hash_lb_config, { minimum_ring_size: '2048', maximum_ring_size: '65536' });
    assert.equal(ring.per_connection_buffer_limit_bytes, 32768);
    assert.deepEqual(ring.common_lb_config, {
      healthy_panic_threshold: { value: 40 },
      update_merge_window: '0.500s',
    });
    assert.equal(clusters[0]!.lb_policy, undefined, 'ROUND_ROBIN is the default and so absent');
    assert.equal(b.stats_flush_interval, '5s');
  });

  it('decodes the Any of a filter into its typed message with the resolved @type', () => {
    const b = bootstrapOf(read({ configPath: fixture('full.pb') }));
    const listeners = (b.static_resources as { listeners: Dump[] }).listeners;
    const hcm = listeners[0]!.filter_chains[0].filters[0].typed_config;
    assert.equal(
      hcm['@type'],
      'type.googleapis.com/envoy.config.filter.network.http_connection_manager.v2.HttpConnectionManager',
    );
    assert.equal(hcm.stat_prefix, 'ingress_http');
    assert.equal(hcm.route_config.virtual_hosts[0].routes.length, 4);
    assert.equal(
      hcm.http_filters[0].typed_config['@type'],
      'type.googleapis.com/envoy.config.filter.http.router.v2.Router',
    );
    const tcp = listeners[1]!.filter_chains[0].filters[0].typed_config;
    assert.deepEqual(tcp, {
      '@type': 'type.googleapis.com/envoy.config.filter.network.tcp_proxy.v2.TcpProxy',
      stat_prefix: 'tcp',
      cluster: 'web_rr',
    });
  });

  it('rejects an unknown extension with a clear error', () => {
    const [error] = errorsOf(load({ configPath: file('bootstrap.toml', 'x = 1') }));
    assert.match(error!, /bootstrap\.toml: unsupported config file extension '\.toml': use \.json, \.yaml/);
  });

  it('reports a YAML syntax error with line and column', () => {
    const path = file('bad.yaml', 'static_resources:\n  clusters:\n    - name: [unclosed\n');
    const errors = errorsOf(load({ configPath: path }));
    assert.equal(errors.length, 1);
    assert.match(errors[0]!, /bad\.yaml: line \d+, column \d+: YAML syntax error/);
  });

  it('reports a JSON syntax error with line and column', () => {
    const path = file('bad.json', '{\n  "admin": {,\n}');
    assert.match(errorsOf(load({ configPath: path }))[0]!, /bad\.json: line 2, column 13: JSON syntax error/);
  });

  it('reports a text-proto parse error and a corrupt binary without throwing', () => {
    assert.match(
      errorsOf(load({ configPath: file('bad.pb_text', 'admn { }') }))[0]!,
      /bad\.pb_text: text proto3 parse error: .*admn/,
    );
    assert.match(
      errorsOf(load({ configPath: file('bad.pb', '\xff\xff\xff') }))[0]!,
      /bad\.pb: binary proto3 decode error/,
    );
  });

  it('reports a missing file and a missing bootstrap', () => {
    assert.match(
      errorsOf(load({ configPath: join(dir, 'nope.yaml') }))[0]!,
      /nope\.yaml: cannot read the config file/,
    );
    assert.match(errorsOf(load({}))[0]!, /no bootstrap: give -c\/--config-path/);
  });

  it('reads .yml, anchors, aliases and merge keys', () => {
    const yaml = [
      'x-cluster: &base',
      '  connect_timeout: 1s',
      '  type: STATIC',
      '  load_assignment: { endpoints: [{ lb_endpoints: [{ endpoint: { address: { socket_address: { address: 127.0.0.1, port_value: 1 } } } }] }] }',
      'static_resources:',
      '  clusters:',
      '    - <<: *base',
      '      name: one',
      '    - <<: *base',
      '      name: two',
    ].join('\n');
    // `x-cluster` is not a Bootstrap field: allow it so only the aliases are under test.
    const result = load({ configPath: file('anchors.yml', yaml), allowUnknownStaticFields: true });
    const clusters = (bootstrapOf(result).static_resources as { clusters: Array<Record<string, unknown>> })
      .clusters;
    assert.deepEqual(
      clusters.map((c) => [c.name, c.connect_timeout]),
      [
        ['one', '1s'],
        ['two', '1s'],
      ],
    );
  });
});
