/**
 * CDS on ADS (v3 transport and resources): clusters added, warming until their endpoints,
 * updated and removed; a bad cluster NACKed while traffic flows; /clusters and /config_dump
 * show the discovered state with versions.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { versionHash } from '../../../src/edges/xds/version-hash.js';
import { prepareHashing } from '../../../src/upstream/hash.js';
import { type ProxyProcess, startProxyProcess } from '../../helpers/proxy-process.js';
import {
  assignment,
  cdsOverAds,
  get,
  httpListener,
  statValue,
  type Upstream,
  until,
  upstream,
} from '../../helpers/xds-fixtures.js';
import { XdsServer } from '../../helpers/xds-server.js';

const ADS_V3 = { ads: {}, resource_api_version: 'V3' };

const edsCluster = (name: string, extra = {}) => ({
  name,
  connect_timeout: '0.25s',
  type: 'EDS',
  eds_cluster_config: { eds_config: ADS_V3 },
  ...extra,
});

interface DynamicCluster {
  version_info: string;
  last_updated: string;
  cluster: { name: string; lb_policy?: string; '@type'?: string };
}

async function clustersDump(proxy: ProxyProcess): Promise<Record<string, DynamicCluster[] | string>> {
  const dump = JSON.parse((await proxy.get('/config_dump')).body) as {
    configs: Array<Record<string, unknown>>;
  };
  const clusters = dump.configs.find((c) => String(c['@type']).endsWith('ClustersConfigDump'));
  return (clusters ?? {}) as Record<string, DynamicCluster[] | string>;
}

describe('CDS on ADS (v3)', () => {
  let xds: XdsServer;
  let proxy: ProxyProcess;
  let port: number;
  const upstreams: Upstream[] = [];

  before(async () => {
    xds = await XdsServer.start();
    for (const name of ['a', 'b']) upstreams.push(await upstream(name));
    await prepareHashing();
    xds.set('cds', [edsCluster('web')], 'c1');
    xds.set('eds', [assignment('web', [upstreams[0]!.port])], 'e1');
    proxy = await startProxyProcess(cdsOverAds(xds.port, [httpListener('in', 'web')]), [
      '--concurrency',
      '1',
    ]);
    port = await proxy.listenerPort('in');
  });

  after(async () => {
    await proxy?.stop();
    await xds?.stop();
    await Promise.all(upstreams.map((u) => u.close()));
  });

  it('goes LIVE with the discovered cluster warm and serving, one ADS stream, v3', async () => {
    const cds = await xds.ack('cds', 'c1');
    const eds = await xds.ack('eds', 'e1');
    assert.equal(
      cds.method,
      '/envoy.service.discovery.v3.AggregatedDiscoveryService/StreamAggregatedResources',
    );
    assert.equal(cds.type_url, 'type.googleapis.com/envoy.config.cluster.v3.Cluster');
    assert.equal(eds.stream, cds.stream, 'CDS and EDS share the ADS stream');
    assert.deepEqual(cds.resource_names, [], 'CDS subscribes to every cluster');
    assert.equal((await get(port)).body, 'a');
    const text = (await proxy.get('/clusters')).body;
    assert.equal(text.split('\n')[0], 'version_info::c1');
    assert.match(text, /^web::added_via_api::true$/m);
    assert.match(text, /^xds_cluster::added_via_api::false$/m);
    const dump = await clustersDump(proxy);
    assert.equal(dump.version_info, 'c1');
    const active = dump.dynamic_active_clusters as DynamicCluster[];
    assert.deepEqual(
      active.map((c) => [c.cluster.name, c.version_info]),
      [['web', 'c1']],
    );
    assert.match(active[0]!.last_updated, /^\d{4}-\d\d-\d\dT/);
    // v3 in, v3 out: the cluster came over a V3 subscription, the static one from the bootstrap
    assert.equal(active[0]!.cluster['@type'], 'type.googleapis.com/envoy.config.cluster.v3.Cluster');
    const statics = dump.static_clusters as unknown as Array<{ cluster: Record<string, unknown> }>;
    assert.equal(statics[0]!.cluster['@type'], 'type.googleapis.com/envoy.api.v2.Cluster');
    assert.equal(dump.dynamic_warming_clusters, undefined);
    const stats = (await proxy.get('/stats?filter=^cluster_manager.cds')).body;
    assert.match(stats, /cluster_manager\.cds\.update_success: 1/);
    assert.equal(await statValue(proxy, 'cluster_manager.cds.version'), versionHash('c1'));
  });

  it('NACKs a bad cluster with error_detail while the good ones keep serving', async () => {
    const from = xds.requests.length;
    xds.set('cds', [edsCluster('web'), { ...edsCluster('bad'), connect_timeout: '0s' }], 'c2');
    const nack = await xds.nack('cds', 10_000, from);
    assert.equal(nack.version_info, 'c1');
    assert.match(nack.error_detail?.message ?? '', /Cluster 'bad': connect_timeout: must be greater than 0s/);
    for (let i = 0; i < 5; i++) assert.equal((await get(port)).body, 'a');
    assert.equal((await proxy.get('/clusters')).body.split('\n')[0], 'version_info::c1');
    assert.doesNotMatch((await proxy.get('/clusters')).body, /^bad::/m);
    const stats = (await proxy.get('/stats?filter=^cluster_manager.cds')).body;
    assert.match(stats, /cluster_manager\.cds\.update_rejected: 1/);
    assert.equal(
      await statValue(proxy, 'cluster_manager.cds.version'),
      versionHash('c1'),
      'a NACKed update leaves the version of the last accepted one',
    );
  });

  it('warms a new EDS cluster until its endpoints arrive, updates and removes clusters', async () => {
    xds.set('cds', [edsCluster('web', { lb_policy: 'RANDOM' }), edsCluster('late')], 'c3');
    await xds.ack('cds', 'c3');
    await until('late warming', async () => {
      const warming = (await clustersDump(proxy)).dynamic_warming_clusters as DynamicCluster[] | undefined;
      return warming?.some((c) => c.cluster.name === 'late') === true;
    });
    const updated = ((await clustersDump(proxy)).dynamic_active_clusters as DynamicCluster[]).find(
      (c) => c.cluster.name === 'web',
    );
    assert.equal(updated?.cluster.lb_policy, 'RANDOM');
    assert.equal(updated?.version_info, 'c3');
    xds.set('eds', [assignment('web', [upstreams[0]!.port]), assignment('late', [upstreams[1]!.port])], 'e2');
    await xds.ack('eds', 'e2');
    await until('late active', async () => {
      const active = (await clustersDump(proxy)).dynamic_active_clusters as DynamicCluster[];
      return active.some((c) => c.cluster.name === 'late');
    });
    xds.set('cds', [edsCluster('late')], 'c4');
    await xds.ack('cds', 'c4');
    await until('web removed', async () => !/^web::/m.test((await proxy.get('/clusters')).body));
    assert.equal((await get(port)).status, 503, 'the route names a cluster that is gone');
    assert.equal((await proxy.get('/clusters')).body.split('\n')[0], 'version_info::c4');
  });
});
