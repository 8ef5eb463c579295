import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { mergeCanonical } from '../../src/bootstrap/merge.js';
import { messageType } from '../../src/bootstrap/schema.js';
import { bootstrapOf, type Dump, errorsOf, fixture, load, read } from '../helpers/bootstrap.js';

type Cluster = Dump;
const clustersOf = (b: Record<string, unknown>) => (b.static_resources as { clusters: Cluster[] }).clusters;

describe('--config-yaml merged over -c', () => {
  it('replaces scalars, merges messages and appends repeated fields', () => {
    const yaml = `
admin: { address: { socket_address: { port_value: 9999 } } }
stats_flush_interval: 2s
static_resources:
  clusters:
    - name: extra
      type: STATIC
      load_assignment: { endpoints: [{ lb_endpoints: [{ endpoint: { address: { socket_address: { address: 10.0.0.1, port_value: 80 } } } }] }] }
`;
    const result = read({ configPath: fixture('full.yaml'), configYaml: yaml });
    const b = bootstrapOf(result);
    assert.equal(b.stats_flush_interval, '2s', 'scalar replaced');
    assert.deepEqual(b.admin, {
      access_log_path: '/dev/null',
      address: { socket_address: { address: '127.0.0.1', port_value: 9999 } },
    });
    assert.deepEqual(
      clustersOf(b).map((c) => c.name),
      ['web_rr', 'web_lr', 'web_ring', 'dynamic_eds', 'extra'],
      'repeated appended',
    );
    assert.ok(result.ok && result.sources.length === 2);
  });

  it('validates the merged result: a duplicate cluster across the two sources is an error', () => {
    const yaml = 'static_resources: { clusters: [{ name: local_service, type: STATIC, hosts: [] }] }';
    const errors = errorsOf(load({ configPath: fixture('default.yaml'), configYaml: yaml }));
    assert.equal(errors.length, 2, errors.join('\n'));
    assert.match(
      errors.join('\n'),
      /default\.yaml \+ --config-yaml: static_resources\.clusters\[1\]\.name: duplicate cluster name 'local_service'/,
    );
  });

  it('names the YAML as the source of its own field errors', () => {
    const errors = errorsOf(read({ configPath: fixture('full.yaml'), configYaml: 'admin: { adress: {} }' }));
    assert.deepEqual(errors.length, 1);
    assert.match(errors[0]!, /^--config-yaml: admin\.adress: unknown field 'adress'/);
  });

  it('accepts --config-yaml alone, and JSON in it', () => {
    const b = bootstrapOf(load({ configYaml: '{"admin": {"profile_path": "/tmp/p"}}' }));
    assert.deepEqual(b, { admin: { profile_path: '/tmp/p' } });
  });

  it('setting one member of a oneof clears the other (protobuf merge)', () => {
    const cluster = messageType('envoy.api.v2.Cluster');
    const merged = mergeCanonical(
      { name: 'c', cluster_type: { name: 'custom' }, lb_policy: 'RING_HASH' },
      { type: 'EDS', lb_policy: 'RANDOM' },
      cluster,
    );
    assert.deepEqual(merged, { name: 'c', type: 'EDS', lb_policy: 'RANDOM' });
  });

  it('replaces map entries by key and leaves the inputs untouched', () => {
    const metadata = messageType('envoy.api.v2.core.Metadata');
    const base = { filter_metadata: { a: { x: 1 }, b: { y: 2 } } };
    const merged = mergeCanonical(base, { filter_metadata: { b: { z: 3 } } }, metadata);
    assert.deepEqual(merged, { filter_metadata: { a: { x: 1 }, b: { z: 3 } } });
    assert.deepEqual(base, { filter_metadata: { a: { x: 1 }, b: { y: 2 } } });
  });
});
