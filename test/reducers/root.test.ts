import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  activeHealthChanged,
  bootstrapLoaded,
  clusterAdded,
  clusterRemoved,
  clustersDiscovered,
  clusterUpdated,
  countersReset,
  discoveryAccepted,
  discoveryTimedOut,
  drainEnded,
  drainStarted,
  type Envelope,
  healthCheckFailed,
  healthCheckOk,
  hostsSet,
  hostsUpdated,
  hotRestarted,
  hotRestartParent,
  initReady,
  initWaiting,
  type JsonObject,
  listenerAdded,
  listenerBindFailed,
  listenerBound,
  listenerRemoved,
  listenersStopped,
  logLevelsChanged,
  outlierChanged,
  type ProxyEvent,
  recentLookupsCleared,
  recentLookupsDisabled,
  recentLookupsEnabled,
  routeConfigSet,
  runtimeLayerLoaded,
  runtimeModified,
  serverStateChanged,
  shutdownRequested,
  updateRejected,
} from '../../events/index.js';
import { applyInPlace, foldAll, initialState, rootReducer, type State } from '../../reducers/index.js';
import { unreadyTargets } from '../../views/init-dump/render.js';

const host = (ip: string, port = 80) => ({
  address: `${ip}:${port}`,
  ip,
  port,
  hostname: '',
  weight: 1,
  priority: 0,
  locality: { region: '', zone: '', sub_zone: '' },
  metadata: {},
  edsHealth: 'HEALTHY' as const,
});

const bootstrap: JsonObject = {
  static_resources: {
    listeners: [
      {
        name: 'in',
        traffic_direction: 'INBOUND',
        address: { socket_address: { address: '127.0.0.1', port_value: 0 } },
      },
      { name: 'out', address: { socket_address: { address: '127.0.0.1', port_value: 0 } } },
    ],
    clusters: [
      {
        name: 'static',
        hosts: [{ socket_address: { address: '10.0.0.9', port_value: 9 } }],
        load_assignment: {
          endpoints: [
            {
              locality: { zone: 'z1' },
              lb_endpoints: [
                { endpoint: { address: { socket_address: { address: '10.0.0.1', port_value: 80 } } } },
                {
                  endpoint: { address: { socket_address: { address: '10.0.0.2', port_value: 80 } } },
                  load_balancing_weight: 3,
                },
              ],
            },
          ],
        },
      },
      {
        name: 'dns',
        type: 'STRICT_DNS',
        load_assignment: {
          endpoints: [
            {
              lb_endpoints: [
                { endpoint: { address: { socket_address: { address: 'svc.local', port_value: 80 } } } },
              ],
            },
          ],
        },
      },
    ],
  },
  layered_runtime: {
    layers: [
      { name: 'static', static_layer: { upstream: { healthy_panic_threshold: 40 }, flag: true } },
      { name: 'disk', disk_layer: { symlink_root: '/srv/runtime' } },
      { name: 'admin', admin_layer: {} },
    ],
  },
};

/** One of every event, in an order that exercises each handler. */
const events: ProxyEvent[] = [
  bootstrapLoaded({ bootstrap, options: { concurrency: 1 }, version: 'v1', sources: ['b.yaml'] }),
  listenerBound({ name: 'in', address: '127.0.0.1', port: 40001 }),
  listenerBindFailed({ name: 'out', error: 'EADDRINUSE' }),
  serverStateChanged({ state: 'LIVE' }),
  hostsSet({ cluster: 'dns', hosts: [host('10.1.0.1'), host('10.1.0.2')], versionInfo: '' }),
  activeHealthChanged({ cluster: 'dns', address: '10.1.0.1:80', healthy: false }),
  outlierChanged({ cluster: 'dns', address: '10.1.0.2:80', ejected: true, reason: 'consecutive_5xx' }),
  hostsUpdated({ cluster: 'dns', updates: [{ address: '10.1.0.2:80', weight: 7, edsHealth: 'DEGRADED' }] }),
  hostsSet({ cluster: 'dns', hosts: [host('10.1.0.1'), host('10.1.0.3')], versionInfo: '' }),
  clusterAdded({ cluster: { name: 'api', type: 'EDS' }, addedViaApi: true, versionInfo: 'v7' }),
  clusterUpdated({ cluster: { name: 'api', type: 'EDS', lb_policy: 'RANDOM' }, versionInfo: 'v8' }),
  updateRejected({ resource: 'cluster', name: 'bad', versionInfo: 'v9', errors: ['name: required'] }),
  clusterRemoved({ name: 'api', versionInfo: 'v10' }),
  runtimeLayerLoaded({ layer: 'disk', values: { 'upstream.healthy_panic_threshold': '30', d: '1' } }),
  runtimeModified({ values: { 'upstream.healthy_panic_threshold': '20', x: 'y' } }),
  runtimeModified({ values: { x: '' } }),
  logLevelsChanged({ levels: { upstream: 'debug' } }),
  recentLookupsEnabled({}),
  recentLookupsCleared({}),
  recentLookupsDisabled({}),
  countersReset({}),
  healthCheckFailed({}),
  healthCheckOk({}),
  drainStarted({ inboundOnly: true, graceful: false, strategy: 'immediate', drainTimeMs: 0 }),
  listenersStopped({ names: ['in'] }),
  shutdownRequested({ reason: 'test' }),
  // Discovery (issue 15), from DISCOVERY_AT on.
  clusterAdded({ cluster: { name: 'late', type: 'EDS' }, addedViaApi: true, versionInfo: 'c1' }),
  clusterUpdated({ cluster: { name: 'late', type: 'EDS', lb_policy: 'RANDOM' }, versionInfo: 'c2' }),
  hostsSet({ cluster: 'late', hosts: [host('10.2.0.1')], versionInfo: 'e1' }),
  clusterAdded({ cluster: { name: 'slow', type: 'EDS' }, addedViaApi: true, versionInfo: 'c3' }),
  discoveryTimedOut({ kind: 'eds', names: ['slow'] }),
  discoveryAccepted({ kind: 'cds', versionInfo: 'c3', names: ['late', 'slow'] }),
  listenerAdded({
    listener: { name: 'lds', address: { socket_address: { address: '127.0.0.1', port_value: 0 } } },
    versionInfo: 'l1',
  }),
  listenerBound({ name: 'lds', address: '127.0.0.1', port: 40002 }),
  listenerAdded({
    listener: {
      name: 'lds',
      address: { socket_address: { address: '127.0.0.1', port_value: 0 } },
      per_connection_buffer_limit_bytes: 1,
    },
    versionInfo: 'l2',
  }),
  listenerRemoved({ name: 'lds', versionInfo: 'l3' }),
  routeConfigSet({ routeConfig: { name: 'r', virtual_hosts: [] }, versionInfo: 'r1' }),
  clustersDiscovered({
    versionInfo: 'c4',
    added: [{ name: 'more', type: 'EDS' }],
    updated: [{ name: 'slow', type: 'EDS', lb_policy: 'RANDOM' }],
    removed: ['late'],
  }),
  discoveryAccepted({ kind: 'cds', versionInfo: 'c4', names: ['more', 'slow'] }),
  // Hot restart (issue 19).
  hotRestarted({ epoch: 1, parentEpoch: 0, firstStartedAt: 500 }),
  hotRestartParent({ epoch: 0, step: 'draining', connections: 3 }),
  drainEnded({ connectionsLeft: 0 }),
  // Initialisation targets of discovery, from INIT_AT on.
  initWaiting({ targets: ['cds:*', 'lds:*', 'rds:front'] }),
  initReady({ targets: ['cds:*', 'lds:*'] }),
];
const DISCOVERY_AT = events.findIndex((e) => clusterAdded.match(e) && e.cluster.name === 'late');
const INIT_AT = events.findIndex((e) => initWaiting.match(e));

const envelopes: Envelope<ProxyEvent>[] = events.map((event, i) => ({
  seq: i + 1,
  at: 1000 + i,
  source: 'test',
  event,
}));

function statesAlong(): State[] {
  const out: State[] = [];
  let state = initialState;
  for (const env of envelopes) {
    state = rootReducer(state, env);
    out.push(state);
  }
  return out;
}

test('every event and every snapshot survives a JSON round trip', () => {
  for (const env of envelopes) assert.deepEqual(JSON.parse(JSON.stringify(env)), env);
  for (const state of statesAlong()) assert.deepEqual(JSON.parse(JSON.stringify(state)), state);
});

test('every snapshot is deeply frozen', () => {
  const check = (value: unknown, path: string) => {
    if (value === null || typeof value !== 'object') return;
    assert.ok(Object.isFrozen(value), `${path} is not frozen`);
    for (const [k, v] of Object.entries(value)) check(v, `${path}.${k}`);
  };
  for (const state of statesAlong()) check(state, 'state');
});

test('the reducer is pure: folding the same envelopes twice gives equal snapshots', () => {
  assert.deepEqual(foldAll(initialState, envelopes), foldAll(initialState, envelopes));
});

test('folding a batch in one produce equals folding its envelopes one by one', () => {
  // The list sets members and then changes their health within the same batch.
  assert.deepEqual(foldAll(initialState, envelopes), statesAlong().at(-1));
  for (let cut = 1; cut < envelopes.length; cut += 3) {
    const twoBatches = foldAll(foldAll(initialState, envelopes.slice(0, cut)), envelopes.slice(cut));
    assert.deepEqual(twoBatches, statesAlong().at(-1), `batches split at ${cut}`);
  }
});

test('folding in place (replays) gives the same state as the immer fold', () => {
  const working = structuredClone(initialState) as State;
  for (const env of envelopes) applyInPlace(working, env);
  assert.deepEqual(working, statesAlong().at(-1));
  assert.equal(initialState.seq, 0, 'the shared initial state is untouched');
});

test('an event of an unknown type returns the very same state', () => {
  const state = foldAll(initialState, envelopes);
  const unknown = {
    seq: 999,
    at: 1,
    source: 'future',
    event: { type: 'future/thing' },
  } as unknown as Envelope<ProxyEvent>;
  assert.equal(rootReducer(state, unknown), state);
});

test('the bootstrap creates clusters, listeners and runtime layers', () => {
  const [loaded] = statesAlong();
  assert.ok(loaded);
  assert.equal(loaded.server.state, 'INITIALIZING');
  assert.deepEqual(Object.keys(loaded.clusters), ['static', 'dns']);
  // load_assignment supersedes the deprecated hosts list.
  assert.deepEqual(
    loaded.clusters.static?.hosts.map((h) => [h.address, h.weight, h.locality.zone]),
    [
      ['10.0.0.1:80', 1, 'z1'],
      ['10.0.0.2:80', 3, 'z1'],
    ],
  );
  assert.deepEqual(loaded.clusters.dns?.hosts, [], 'names wait for DNS');
  assert.equal(loaded.clusterManager.versionInfo, 'static');
  assert.deepEqual(
    loaded.runtime.layers.map((l) => [l.name, l.kind]),
    [
      ['static', 'static'],
      ['disk', 'disk'],
      ['admin', 'admin'],
    ],
  );
  assert.deepEqual(loaded.runtime.layers[0]?.values, {
    'upstream.healthy_panic_threshold': '40',
    flag: 'true',
  });
});

test('membership changes keep the health verdicts of hosts that stay', () => {
  const states = statesAlong();
  const afterFlaps = states[7];
  const dns = afterFlaps?.clusters.dns?.hosts;
  assert.deepEqual(
    dns?.map((h) => [h.address, h.failedActiveHc, h.failedOutlierCheck, h.weight, h.edsHealth]),
    [
      ['10.1.0.1:80', true, false, 1, 'HEALTHY'],
      ['10.1.0.2:80', false, true, 7, 'DEGRADED'],
    ],
  );
  const afterSet = states[8]?.clusters.dns?.hosts;
  assert.deepEqual(
    afterSet?.map((h) => [h.address, h.failedActiveHc]),
    [
      ['10.1.0.1:80', true],
      ['10.1.0.3:80', false],
    ],
  );
});

test('clusters from discovery carry their version and are removed', () => {
  const states = statesAlong();
  assert.equal(states[9]?.clusters.api?.addedViaApi, true);
  assert.equal(states[9]?.clusterManager.versionInfo, 'v7');
  assert.equal(states[10]?.clusters.api?.config.lb_policy, 'RANDOM');
  assert.equal(states[11]?.rejected[0]?.errors[0], 'name: required');
  assert.equal(states[12]?.clusters.api, undefined);
  assert.equal(states[12]?.clusterManager.versionInfo, 'v10');
});

test('discovery: a discovered EDS cluster warms until members or its fetch timeout; versions, listeners, route tables', () => {
  const states = statesAlong();
  const at = (n: number) => states[DISCOVERY_AT + n]!;
  assert.equal(at(0).clusters.late?.warming, true);
  assert.equal(at(1).clusters.late?.warming, true, 'a config change leaves it warming');
  assert.equal(at(2).clusters.late?.warming, undefined, 'members arrived');
  assert.equal(at(3).clusters.slow?.warming, true);
  assert.equal(at(4).clusters.slow?.warming, undefined, 'its initial fetch timed out');
  assert.equal(at(5).clusterManager.versionInfo, 'c3');
  assert.ok(!('cds' in at(5).discovery.versions), 'the CDS version is held once, by clusterManager');
  assert.deepEqual(at(6).listeners.lds?.discovered, { versionInfo: 'l1' });
  assert.equal(at(6).listeners.lds?.state, 'pending');
  assert.equal(at(8).listeners.lds?.state, 'active', 'a change on the same address keeps its socket');
  assert.equal(at(8).listeners.lds?.boundAddress, '127.0.0.1:40002');
  assert.equal(at(9).listeners.lds, undefined);
  assert.equal(at(10).discovery.routes.r?.versionInfo, 'r1');
  assert.equal(at(11).clusters.more?.warming, true, 'one CDS event adds...');
  assert.equal(at(11).clusters.slow?.config.lb_policy, 'RANDOM', '...updates...');
  assert.equal(at(11).clusters.late, undefined, '...and removes');
  assert.equal(at(11).clusterManager.versionInfo, 'c3', 'the CDS version moves once, when accepted');
  assert.equal(at(12).clusterManager.versionInfo, 'c4');
  const init = (n: number) => states[INIT_AT + n]!;
  assert.deepEqual(init(0).discovery.waiting, ['cds:*', 'lds:*', 'rds:front']);
  assert.ok(unreadyTargets(init(0)).cluster.includes('CdsApi'));
  assert.deepEqual(init(1).discovery.waiting, ['rds:front']);
  assert.deepEqual(unreadyTargets(init(1)).listener, ['RdsRouteConfigSubscription front']);
});

test('runtime: admin values override lower layers, an empty value deletes the admin key', () => {
  const states = statesAlong();
  const admin = (s: State | undefined) => s?.runtime.layers.at(-1)?.values;
  assert.deepEqual(admin(states[14]), { 'upstream.healthy_panic_threshold': '20', x: 'y' });
  assert.deepEqual(admin(states[15]), { 'upstream.healthy_panic_threshold': '20' });
  assert.equal(states[15]?.runtime.layers[1]?.values.d, '1');
});

test('listeners, drain, health check and stats control follow their events', () => {
  const states = statesAlong();
  assert.equal(states[1]?.listeners.in?.boundAddress, '127.0.0.1:40001');
  assert.equal(states[2]?.listeners.out?.state, 'failed');
  const last = states.at(-1);
  assert.ok(last);
  assert.equal(states[20]?.stats.countersResetSeq, 21);
  assert.equal(states[18]?.stats.recentLookupsEnabled, true);
  assert.equal(states[19]?.stats.recentLookupsEnabled, false);
  assert.equal(states[21]?.server.healthCheckFailed, true);
  assert.equal(states[22]?.server.healthCheckFailed, false);
  assert.equal(states[23]?.listeners.in?.state, 'draining', 'inbound listener drains');
  assert.equal(
    states[23]?.listeners.out?.state,
    'failed',
    'outbound listener untouched by an inbound-only drain',
  );
  assert.equal(last.listeners.in?.state, 'stopped');
  assert.equal(last.logging.levels.upstream, 'debug');
  assert.equal(last.server.shutdownRequested, true);
});
