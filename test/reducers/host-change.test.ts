/**
 * The change a received member set makes to a snapshot (`hostsChange`), which the store asks
 * for the DNS and EDS edges. Root cause of the move: each edge diffed what it received against
 * `store.state` itself before dispatching, reducer work outside the fold; now the edges hand
 * over what they received (`Store.receiveHosts`) and this pure view decides the event.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import {
  bootstrapLoaded,
  clusterAdded,
  type HostSpec,
  type JsonObject,
  type ProxyEvent,
  type RawCluster,
} from '../../events/index.js';
import { hostsChange } from '../../reducers/host-change.js';
import { foldAll, initialState, type State } from '../../reducers/index.js';
import { Store } from '../../src/control/store.js';
import { hostSpec } from '../helpers/upstream.js';

const host = (ip: string, extra: Partial<HostSpec> = {}): HostSpec => hostSpec(`${ip}:80`, extra);

const dns: RawCluster = { name: 'dns', type: 'STRICT_DNS' };
const eds: RawCluster = { name: 'eds', type: 'EDS' };

function fold(state: State, ...events: ProxyEvent[]): State {
  return foldAll(
    state,
    events.map((event, i) => ({ seq: i + 1, at: i, source: 'test', event })),
  );
}

const start = fold(
  initialState,
  bootstrapLoaded({
    bootstrap: { static_resources: { clusters: [dns] } },
    options: {},
    version: 'v',
    sources: [],
  }),
);
const config = start.clusters.dns!.config;

test('members that arrive or leave make a whole set; weights, metadata or health alone an update; none nothing', () => {
  const first = hostsChange(start, { cluster: 'dns', hosts: [host('10.0.0.1')], versionInfo: '', config });
  assert.equal(first?.type, 'endpoints/hosts-set');
  const one = fold(start, first!);
  assert.equal(hostsChange(one, { cluster: 'dns', hosts: [host('10.0.0.1')], versionInfo: '' }), null);
  assert.deepEqual(
    hostsChange(one, { cluster: 'dns', hosts: [host('10.0.0.1', { weight: 3 })], versionInfo: '' }),
    {
      type: 'endpoints/hosts-updated',
      cluster: 'dns',
      updates: [{ address: '10.0.0.1:80', weight: 3 }],
    },
  );
  const moved = hostsChange(one, {
    cluster: 'dns',
    hosts: [host('10.0.0.1', { priority: 1 })],
    versionInfo: 'v2',
  });
  assert.equal(moved?.type, 'endpoints/hosts-set', 'a priority change is a new member');
  const twice = hostsChange(one, {
    cluster: 'dns',
    hosts: [host('10.0.0.1'), host('10.0.0.1')],
    versionInfo: '',
  });
  assert.equal(twice?.type, 'endpoints/hosts-set', 'a repeated address is a membership change');
});

test('a warming cluster gets its first members even when they are none; a gone or reconfigured cluster nothing', () => {
  const warming = fold(start, clusterAdded({ cluster: eds, addedViaApi: true, versionInfo: 'c1' }));
  assert.equal(warming.clusters.eds?.warming, true);
  assert.deepEqual(hostsChange(warming, { cluster: 'eds', hosts: [], versionInfo: 'e1' }), {
    type: 'endpoints/hosts-set',
    cluster: 'eds',
    hosts: [],
    versionInfo: 'e1',
  });
  assert.equal(hostsChange(warming, { cluster: 'gone', hosts: [host('10.0.0.1')], versionInfo: '' }), null);
  const stale = { ...config };
  assert.equal(
    hostsChange(start, { cluster: 'dns', hosts: [host('10.0.0.1')], versionInfo: '', config: stale }),
    null,
    'members looked up for a config the cluster no longer has',
  );
});

test('the store dispatches the change a received set makes, and nothing for a set that makes none', () => {
  const store = new Store({ initial: start });
  const seen: string[] = [];
  store.ingested$.subscribe((env) => seen.push(env.event.type));
  assert.ok(
    store.receiveHosts({ cluster: 'dns', hosts: [host('10.0.0.1')], versionInfo: '', config }, 'dns'),
  );
  assert.equal(
    store.receiveHosts({ cluster: 'dns', hosts: [host('10.0.0.1')], versionInfo: '' }, 'dns'),
    null,
  );
  assert.ok(
    store.receiveHosts({ cluster: 'dns', hosts: [host('10.0.0.1', { weight: 2 })], versionInfo: '' }, 'dns'),
  );
  assert.deepEqual(seen, ['endpoints/hosts-set', 'endpoints/hosts-updated']);
  // The update waits out the merge window the whole set opened; closing the store delivers it.
  assert.equal(store.state.clusters.dns?.hosts[0]?.weight, 1);
  store.close();
  assert.equal(store.state.clusters.dns?.hosts[0]?.weight, 2);
});

test('folding the change makes the members what was received, and the same set again changes nothing', () => {
  const spec = fc.record({
    last: fc.integer({ min: 1, max: 6 }),
    weight: fc.integer({ min: 1, max: 3 }),
    priority: fc.integer({ min: 0, max: 1 }),
    zone: fc.constantFrom('', 'a'),
    edsHealth: fc.constantFrom('HEALTHY' as const, 'UNHEALTHY' as const, 'DEGRADED' as const),
    metadata: fc.constantFrom<JsonObject>({}, { filter_metadata: { lb: { v: 1 } } }),
  });
  const set = fc.uniqueArray(spec, { selector: (h) => h.last, maxLength: 5 }).map((list) =>
    list.map((h) =>
      host(`10.0.0.${h.last}`, {
        weight: h.weight,
        priority: h.priority,
        locality: { region: '', zone: h.zone, sub_zone: '' },
        edsHealth: h.edsHealth,
        metadata: h.metadata,
      }),
    ),
  );
  fc.assert(
    fc.property(fc.array(set, { minLength: 1, maxLength: 4 }), (sets) => {
      let state = start;
      for (const hosts of sets) {
        const change = hostsChange(state, { cluster: 'dns', hosts, versionInfo: '' });
        if (change) state = fold(state, change);
        const now = state.clusters.dns!.hosts;
        assert.deepEqual(
          now.map((h) => [h.address, h.weight, h.priority, h.locality.zone, h.edsHealth, h.metadata]),
          hosts.map((h) => [h.address, h.weight, h.priority, h.locality.zone, h.edsHealth, h.metadata]),
        );
        assert.equal(hostsChange(state, { cluster: 'dns', hosts, versionInfo: '' }), null);
      }
    }),
    { seed: 2603, numRuns: Number(process.env.FUZZ_RUNS ?? 200) },
  );
});
