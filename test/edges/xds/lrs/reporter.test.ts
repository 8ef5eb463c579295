/**
 * Load reporting (LRS) against a test server, through a real proxy to real upstreams: the
 * proxy opens the stream with its node, reports the clusters asked for every interval with
 * the requests since the last report (per locality, per endpoint when asked), follows a new
 * response, reconnects to a restarted server, and with workers counts every worker's traffic.
 */
import assert from 'node:assert/strict';
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import type { JsonObject } from '../../../../events/index.js';
import { LRS_METHODS, LrsServer, type SeenClusterStats, type SeenReport } from '../../../helpers/lrs-server.js';
import { type ProxyProcess, startProxyProcess } from '../../../helpers/proxy-process.js';
import { ADMIN, httpListener, staticCluster, statValue, until } from '../../../helpers/xds-fixtures.js';

/** An upstream answering 503 to `/fail...` and 200 with `name` to anything else. */
async function upstream(name: string): Promise<{ port: number; close(): Promise<void> }> {
  const server = http.createServer((req, res) => {
    res.statusCode = req.url?.startsWith('/fail') ? 503 : 200;
    res.end(name);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as AddressInfo).port,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** One request on its own connection, so that with workers each one may land on either. */
function get(port: number, path: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = http.get({ host: '127.0.0.1', port, path, agent: false }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.setTimeout(5000, () => req.destroy(new Error('request timed out')));
    req.on('error', reject);
  });
}

const LOCALITY = { region: 'eu', zone: 'eu-a', sub_zone: '' };

function bootstrap(webPort: number, otherPort: number, lrsPort: number, transport = 'V2'): JsonObject {
  const web = staticCluster('web', [webPort]);
  (web.load_assignment as { endpoints: JsonObject[] }).endpoints[0]!.locality = LOCALITY;
  return {
    admin: ADMIN,
    node: { id: 'node-1', cluster: 'fleet' },
    static_resources: {
      listeners: [
        httpListener('ingress', 'web', [{ match: { prefix: '/other' }, route: { cluster: 'other' } }]),
      ],
      clusters: [web, staticCluster('other', [otherPort]), staticCluster('lrs', [lrsPort], true)],
    },
    cluster_manager: {
      load_stats_config: {
        api_type: 'GRPC',
        transport_api_version: transport,
        grpc_services: [{ envoy_grpc: { cluster_name: 'lrs' } }],
      },
    },
  };
}

/** The stats of `cluster` in a report, if it names it. */
const statsOf = (report: SeenReport, cluster: string): SeenClusterStats | undefined =>
  report.cluster_stats.find((c) => c.cluster_name === cluster);

/** Successes, errors and issued requests of a cluster summed over its localities. */
function totals(stats: SeenClusterStats | undefined): { ok: number; errors: number; issued: number } {
  const out = { ok: 0, errors: 0, issued: 0 };
  for (const l of stats?.upstream_locality_stats ?? []) {
    out.ok += l.total_successful_requests;
    out.errors += l.total_error_requests;
    out.issued += l.total_issued_requests;
  }
  return out;
}

/**
 * Sums the counts of `cluster` over every report from `from` on, once two more reports of it
 * came: the second one was made after the first was sent, so after every request before the
 * call. What the traffic before the call added up to.
 */
async function countedSince(lrs: LrsServer, from: number, cluster: string) {
  const names = (r: SeenReport) => statsOf(r, cluster) !== undefined;
  const next = await lrs.waitFor(names, lrs.reports.length);
  await lrs.waitFor(names, lrs.reports.indexOf(next) + 1);
  const sum = { ok: 0, errors: 0, issued: 0 };
  for (const report of lrs.reports.slice(from)) {
    const t = totals(statsOf(report, cluster));
    sum.ok += t.ok;
    sum.errors += t.errors;
    sum.issued += t.issued;
  }
  return sum;
}

describe('load reporting (LRS), one process', () => {
  let lrs: LrsServer;
  let proxy: ProxyProcess;
  let port: number;
  const upstreams: Array<{ port: number; close(): Promise<void> }> = [];

  before(async () => {
    upstreams.push(await upstream('web'), await upstream('other'));
    lrs = await LrsServer.start();
    lrs.respond({ clusters: ['web'], load_reporting_interval: '0.3s' });
    proxy = await startProxyProcess(bootstrap(upstreams[0]!.port, upstreams[1]!.port, lrs.port), [
      '--concurrency',
      '1',
    ]);
    port = await proxy.listenerPort('ingress');
  });

  after(async () => {
    await proxy?.stop();
    await lrs?.stop();
    await Promise.all(upstreams.map((u) => u.close()));
  });

  it('opens the stream with its node and no stats, then reports the cluster asked for', async () => {
    const first = await lrs.waitFor(() => true);
    assert.equal(first.method, LRS_METHODS.V2);
    assert.equal(first.node?.id, 'node-1');
    assert.equal(first.node?.cluster, 'fleet');
    assert.ok(first.node?.client_features.includes('envoy.lrs.supports_send_all_clusters'));
    assert.deepEqual(first.cluster_stats, []);
    const report = await lrs.waitFor((r) => statsOf(r, 'web') !== undefined);
    assert.deepEqual(
      report.cluster_stats.map((c) => c.cluster_name),
      ['web'],
      'only the cluster asked for',
    );
    assert.ok(report.node, 'every report carries the node, as the reference sends it');
  });

  it('counts the traffic since the last report per locality, then nothing once it stops', async () => {
    const from = lrs.reports.length;
    const codes = [];
    for (const path of ['/a', '/b', '/fail', '/c', '/fail']) codes.push(await get(port, path));
    assert.deepEqual(codes, [200, 200, 503, 200, 503]);
    assert.deepEqual(await countedSince(lrs, from, 'web'), { ok: 3, errors: 2, issued: 5 });
    const counted = lrs.reports.slice(from).flatMap((r) => statsOf(r, 'web')?.upstream_locality_stats ?? []);
    for (const l of counted) {
      assert.deepEqual(l.locality, LOCALITY);
      assert.equal(l.upstream_endpoint_stats.length, 0, 'no endpoint stats unless asked');
    }
    // Deltas: the next report after the counted ones has no request, so no locality.
    const quiet = await lrs.waitFor((r) => statsOf(r, 'web') !== undefined, lrs.reports.length);
    const web = statsOf(quiet, 'web')!;
    assert.deepEqual(web.upstream_locality_stats, []);
    const interval = web.load_report_interval.seconds + web.load_report_interval.nanos / 1e9;
    assert.ok(interval >= 0.25 && interval < 3, `load_report_interval ${interval}s is about 0.3s`);
    assert.equal(web.total_dropped_requests, 0);
    assert.ok(((await statValue(proxy, 'cluster_manager.load_reporter.requests')) ?? 0) >= 1);
    assert.ok(((await statValue(proxy, 'cluster_manager.load_reporter.responses')) ?? 0) >= 3);
    assert.equal(await statValue(proxy, 'cluster_manager.load_reporter.errors'), 0);
  });

  it('follows a new response: its clusters, its interval, endpoint granularity', async () => {
    lrs.respond({ clusters: ['other'], load_reporting_interval: '0.2s', report_endpoint_granularity: true });
    const switched = await lrs.waitFor((r) => statsOf(r, 'other') !== undefined, lrs.reports.length);
    assert.equal(statsOf(switched, 'web'), undefined, 'web is no longer asked for');
    const from = lrs.reports.indexOf(switched) + 1;
    for (let i = 0; i < 4; i++) assert.equal(await get(port, '/other'), 200);
    assert.deepEqual(await countedSince(lrs, from, 'other'), { ok: 4, errors: 0, issued: 4 });
    const endpoints = lrs.reports
      .slice(from)
      .flatMap((r) => statsOf(r, 'other')?.upstream_locality_stats ?? [])
      .flatMap((l) => l.upstream_endpoint_stats);
    assert.ok(endpoints.length >= 1);
    for (const e of endpoints)
      assert.deepEqual(
        [e.address.socket_address.address, e.address.socket_address.port_value],
        ['127.0.0.1', upstreams[1]!.port],
      );
    assert.equal(
      endpoints.reduce((n, e) => n + e.total_successful_requests, 0),
      4,
    );
  });

  it('reports every cluster with send_all_clusters', async () => {
    lrs.respond({ send_all_clusters: true, load_reporting_interval: '0.2s' });
    const all = await lrs.waitFor((r) => r.cluster_stats.length === 3, lrs.reports.length);
    assert.deepEqual(all.cluster_stats.map((c) => c.cluster_name).sort(), ['lrs', 'other', 'web']);
  });

  it('reconnects after the server restarts; its first message reports the outage', async () => {
    const lrsPort = lrs.port;
    await lrs.stop();
    await until(
      'a broken stream counted',
      async () => ((await statValue(proxy, 'cluster_manager.load_reporter.errors')) ?? 0) >= 1,
    );
    assert.equal(await get(port, '/during-outage'), 200);
    lrs = await LrsServer.start(lrsPort);
    lrs.respond({ clusters: ['web'], load_reporting_interval: '0.2s' });
    const reopened = await lrs.waitFor(() => true, 0, 15_000);
    assert.equal(reopened.node?.id, 'node-1');
    // The last response (send_all_clusters) still applies until the new one arrives.
    assert.deepEqual(reopened.cluster_stats.map((c) => c.cluster_name).sort(), ['lrs', 'other', 'web']);
    assert.deepEqual(totals(statsOf(reopened, 'web')), { ok: 1, errors: 0, issued: 1 });
    const from = lrs.reports.length;
    assert.equal(await get(port, '/after'), 200);
    assert.deepEqual(await countedSince(lrs, from, 'web'), { ok: 1, errors: 0, issued: 1 });
  });
});

describe('load reporting (LRS) with --concurrency 2, over v3', () => {
  it("reports every worker's requests", async () => {
    const up = await upstream('web');
    const other = await upstream('other');
    const lrs = await LrsServer.start();
    lrs.respond({ clusters: ['web'], load_reporting_interval: '0.3s' });
    const proxy = await startProxyProcess(bootstrap(up.port, other.port, lrs.port, 'V3'), [
      '--concurrency',
      '2',
    ]);
    try {
      const port = await proxy.listenerPort('ingress');
      const first = await lrs.waitFor((r) => statsOf(r, 'web') !== undefined);
      assert.equal(first.method, LRS_METHODS.V3);
      const from = lrs.reports.length;
      const codes = await Promise.all(
        Array.from({ length: 12 }, (_, i) => get(port, i % 4 === 3 ? '/fail' : '/ok')),
      );
      assert.equal(codes.filter((c) => c === 200).length, 9);
      assert.deepEqual(await countedSince(lrs, from, 'web'), { ok: 9, errors: 3, issued: 12 });
    } finally {
      await proxy.stop();
      await lrs.stop();
      await up.close();
      await other.close();
    }
  });
});
