/**
 * Every dynamic resource's status in /config_dump (issue 30): each with its version and
 * `last_updated`, and `error_state` (the last rejection's details, time and version) when its
 * last update was rejected, for every type; a name only ever rejected is listed with its error
 * alone. Before, only listeners carried `error_state`.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  bootstrapLoaded,
  clustersDiscovered,
  type Envelope,
  type ProxyEvent,
  type RawCluster,
  routeConfigSet,
  secretSet,
  updateRejected,
} from '../../../events/index.js';
import { foldAll, initialState, type State } from '../../../reducers/index.js';
import { selectDumps } from '../../../views/config-dump/select.js';
import { madeWhole } from '../../../views/lazy-list.js';

const eds = (name: string): RawCluster => ({
  name,
  type: 'EDS',
  connect_timeout: '1s',
  eds_cluster_config: { eds_config: { ads: {} }, service_name: `${name}-svc` },
});

function fold(events: ProxyEvent[]): State {
  const all: ProxyEvent[] = [
    bootstrapLoaded({ bootstrap: { static_resources: {} }, options: {}, version: 't', sources: [] }),
    ...events,
  ];
  const envs: Envelope<ProxyEvent>[] = all.map((event, i) => ({
    seq: i + 1,
    at: 1000 * (i + 1),
    source: 'test',
    event,
  }));
  return foldAll(initialState, envs);
}

const rejected = (resource: string, name: string, versionInfo: string) =>
  updateRejected({ resource, name, versionInfo, errors: [`${name} is bad`] });

function dump(state: State, key: string): Record<string, Array<Record<string, unknown>>> {
  const found = selectDumps(state, true, null).find((d) => d.key === key);
  return madeWhole(found?.fields) as Record<string, Array<Record<string, unknown>>>;
}

const errorOf = (entry: Record<string, unknown> | undefined) =>
  entry?.error_state as { details: string; version_info: string; last_update_attempt: string } | undefined;

test('clusters, endpoints, route tables and secrets carry error_state after a rejection, with the version they still serve', () => {
  const state = fold([
    clustersDiscovered({ versionInfo: 'c1', added: [eds('web'), eds('api')], updated: [], removed: [] }),
    routeConfigSet({ routeConfig: { name: 'routes', virtual_hosts: [] }, versionInfo: 'r1' }),
    secretSet({ secret: { name: 'cert', validation_context: {} }, versionInfo: 's1' }),
    rejected('Cluster', 'web', 'c2'),
    rejected('Cluster', 'ghost', 'c2'),
    rejected('ClusterLoadAssignment', 'web-svc', 'e2'),
    rejected('RouteConfiguration', 'routes', 'r2'),
    rejected('RouteConfiguration', 'never', 'r2'),
    rejected('Secret', 'cert', 's2'),
  ]);
  const clusters = dump(state, 'clusters').dynamic_warming_clusters ?? [];
  const byName = (list: Array<Record<string, unknown>>, field: string) =>
    new Map(list.map((e) => [String((e[field] as { name?: string } | undefined)?.name ?? e.name), e]));
  const warm = byName(clusters, 'cluster');
  assert.equal(errorOf(warm.get('web'))?.version_info, 'c2');
  assert.equal(errorOf(warm.get('web'))?.details, 'web is bad');
  assert.match(errorOf(warm.get('web'))?.last_update_attempt ?? '', /^1970-01-01T00:00:05/);
  assert.equal(warm.get('web')?.version_info, 'c1', 'the version it serves is still the accepted one');
  const active = byName(dump(state, 'clusters').dynamic_active_clusters ?? [], 'cluster');
  assert.equal(
    errorOf(active.get('ghost'))?.version_info,
    'c2',
    'a cluster only ever rejected is listed with its error',
  );

  const endpoints = dump(state, 'endpoints').dynamic_endpoint_configs ?? [];
  const web = endpoints.find((e) => (e.endpoint_config as { cluster_name: string }).cluster_name === 'web');
  assert.equal(errorOf(web)?.version_info, 'e2', 'keyed by the EDS service name');

  const routes = byName(dump(state, 'routes').dynamic_route_configs ?? [], 'route_config');
  assert.equal(routes.get('routes')?.version_info, 'r1');
  assert.equal(errorOf(routes.get('routes'))?.version_info, 'r2');
  assert.equal(errorOf(routes.get('never'))?.details, 'never is bad');

  const secrets = byName(dump(state, 'secrets').dynamic_active_secrets ?? [], 'name');
  assert.equal(secrets.get('cert')?.version_info, 's1');
  assert.equal(errorOf(secrets.get('cert'))?.version_info, 's2');
});

test('a config accepted after the rejection clears error_state', () => {
  const state = fold([
    rejected('RouteConfiguration', 'routes', 'r0'),
    routeConfigSet({ routeConfig: { name: 'routes', virtual_hosts: [] }, versionInfo: 'r1' }),
  ]);
  const routes = dump(state, 'routes').dynamic_route_configs ?? [];
  assert.equal(routes.length, 1);
  assert.equal(routes[0]?.version_info, 'r1');
  assert.equal(routes[0]?.error_state, undefined);
});
