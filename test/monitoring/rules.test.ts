/**
 * The shipped Prometheus rules (monitoring/envoy.rules.yml) against what a real proxy
 * exports: `promtool check rules`, then `promtool test rules` whose input series are two
 * scrapes of /stats/prometheus (with `--prometheus-names envoy`) around real traffic, spread
 * over 20 minutes. The traffic makes the alerts fire where they should: a cluster answering
 * 503 (error ratio, outlier ejection), a slow one (p99 latency), a CDS update NACKed and the
 * management server gone (rejected xDS update, control plane disconnected); a healthy
 * cluster fires nothing. The community dashboard query
 * `sum(rate(envoy_cluster_upstream_rq_total[1m])) by (envoy_cluster_name)` gets a series per
 * cluster that took traffic.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { stringify } from 'yaml';
import { root } from '../helpers/bootstrap.js';
import { hcmWithRoutes, httpListener } from '../helpers/bootstraps.js';
import { type ProxyProcess, startProxyProcess } from '../helpers/proxy-process.js';
import { ADMIN, adsConfig, staticCluster, until } from '../helpers/xds-fixtures.js';
import { XdsServer } from '../helpers/xds-server.js';

const RULES = join(root, 'monitoring/envoy.rules.yml');
const PROMTOOL = '/usr/bin/promtool';
const missing = existsSync(PROMTOOL)
  ? false
  : 'promtool is absent (scripts/install-system-deps.sh installs it)';

function promtool(args: string[]): { status: number | null; output: string } {
  const run = spawnSync(PROMTOOL, args, { encoding: 'utf8', timeout: 120_000 });
  return { status: run.status, output: `${run.stdout}${run.stderr}` };
}

/** One sample of an exposition: `name{labels}` as written, its value, and its family's type. */
interface Sample {
  series: string;
  value: number;
  type: string;
}

/** Parses exposition format 0.0.4 as the proxy writes it (one `# TYPE` per family). */
function parseScrape(text: string): Map<string, Sample> {
  const types = new Map<string, string>();
  const out = new Map<string, Sample>();
  for (const line of text.split('\n')) {
    const type = /^# TYPE (\S+) (\S+)$/.exec(line);
    if (type) types.set(type[1]!, type[2]!);
    if (line === '' || line.startsWith('#')) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{.*\})? (\S+)$/.exec(line);
    assert.ok(m, `unparsable sample line: ${line}`);
    const name = m[1]!;
    const family = types.get(name) ?? types.get(name.replace(/_(bucket|sum|count)$/, '')) ?? 'untyped';
    out.set(`${name}${m[2] ?? '{}'}`, {
      series: `${name}${m[2] ?? '{}'}`,
      value: Number(m[3]),
      type: family,
    });
  }
  return out;
}

const STEPS = 20;
const INSTANCE = 'instance="proxy-under-test",job="proxy"';

/**
 * promtool input series: the second scrape's samples, each at one-minute steps over 20
 * minutes: a counter or histogram grows evenly from its first-scrape value (0 when it was
 * absent) to its second, a gauge holds its second value.
 */
function inputSeries(
  first: Map<string, Sample>,
  second: Map<string, Sample>,
): Array<{ series: string; values: string }> {
  return [...second.values()].map((s) => {
    const series = s.series.endsWith('{}')
      ? s.series.replace(/\{\}$/, `{${INSTANCE}}`)
      : s.series.replace(/\}$/, `,${INSTANCE}}`);
    if (s.type === 'gauge') return { series, values: `${s.value}x${STEPS}` };
    const from = first.get(s.series)?.value ?? 0;
    return { series, values: `${from}+${(s.value - from) / STEPS}x${STEPS}` };
  });
}

describe('monitoring/envoy.rules.yml', { skip: missing }, () => {
  let xds: XdsServer;
  let proxy: ProxyProcess;
  const servers: http.Server[] = [];
  const dir = mkdtempSync(join(tmpdir(), 'proxy-rules-'));
  let first = new Map<string, Sample>();
  let second = new Map<string, Sample>();

  const serve = async (handler: http.RequestListener): Promise<number> => {
    const server = http.createServer(handler);
    servers.push(server);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return (server.address() as AddressInfo).port;
  };
  const scrape = async () => {
    const res = await proxy.get('/stats/prometheus');
    assert.equal(res.status, 200);
    return parseScrape(res.body);
  };

  before(async () => {
    const web = await serve((_req, res) => res.end('ok'));
    const flaky = await serve((_req, res) => {
      res.statusCode = 503;
      res.end('down');
    });
    const slow = await serve((_req, res) => setTimeout(() => res.end('late'), 1100));
    xds = await XdsServer.start();
    xds.set('cds', [{ ...staticCluster('discovered', [web]) }], 'c1');
    const route = (prefix: string, cluster: string) => ({ match: { prefix }, route: { cluster } });
    proxy = await startProxyProcess(
      {
        admin: ADMIN,
        dynamic_resources: {
          cds_config: { ads: {}, resource_api_version: 'V3' },
          ads_config: adsConfig('V3'),
        },
        static_resources: {
          clusters: [
            staticCluster('xds_cluster', [xds.port], true),
            staticCluster('web', [web]),
            {
              ...staticCluster('flaky', [flaky]),
              outlier_detection: {
                consecutive_5xx: 3,
                max_ejection_percent: 100,
                base_ejection_time: '600s',
              },
            },
            staticCluster('slow', [slow]),
          ],
          listeners: [
            httpListener(
              hcmWithRoutes([route('/flaky', 'flaky'), route('/slow', 'slow'), route('/', 'web')], 'ingress'),
            ),
          ],
        },
      },
      ['--concurrency', '2', '--prometheus-names', 'envoy'],
      60_000,
    );
    await xds.ack('cds', 'c1');
    first = await scrape();
    const port = await proxy.listenerPort('http');
    const get = async (path: string) => (await fetch(`http://127.0.0.1:${port}${path}`)).status;
    for (let i = 0; i < 10; i++) assert.equal(await get('/'), 200);
    for (let i = 0; i < 10; i++) assert.equal(await get('/flaky'), 503);
    assert.deepEqual(await Promise.all([1, 2, 3, 4].map(() => get('/slow'))), [200, 200, 200, 200]);
    // a CDS update the proxy refuses, then the management server goes away
    const from = xds.requests.length;
    xds.set('cds', [{ ...staticCluster('discovered', [web]), connect_timeout: '0s' }], 'c2');
    await xds.nack('cds', 10_000, from);
    await xds.stop();
    await until('the control plane is seen disconnected', async () =>
      (await proxy.get('/stats?filter=^control_plane.connected_state$')).body.includes(': 0'),
    );
    second = await scrape();
  });

  after(async () => {
    await proxy?.stop();
    await xds?.stop();
    for (const s of servers) s.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('passes promtool check rules', () => {
    const run = promtool(['check', 'rules', RULES]);
    assert.equal(run.status, 0, run.output);
    assert.match(run.output, /SUCCESS: \d+ rules found/);
  });

  it('exposes the reference names and labels the rules and dashboards query', () => {
    for (const series of [
      'envoy_cluster_upstream_rq_total{envoy_cluster_name="web"}',
      'envoy_cluster_upstream_rq_xx{envoy_response_code_class="5",envoy_cluster_name="flaky"}',
      'envoy_cluster_upstream_rq_time_bucket{envoy_cluster_name="slow",le="2500"}',
      'envoy_http_downstream_rq_total{envoy_http_conn_manager_prefix="ingress"}',
      'envoy_cluster_outlier_detection_ejections_active{envoy_cluster_name="flaky"}',
      'envoy_cluster_manager_cds_update_rejected{}',
      'envoy_control_plane_connected_state{}',
    ])
      assert.ok(second.has(series), `${series} is not in the scrape`);
    assert.equal(second.get('envoy_cluster_upstream_rq_total{envoy_cluster_name="web"}')?.value, 10);
    assert.equal(second.get('envoy_cluster_manager_cds_update_rejected{}')?.value, 1);
    assert.ok(
      [...second.keys()].every((k) => !k.startsWith('proxy_')),
      'a proxy_ name is left',
    );
  });

  it('passes promtool test rules on the scraped series', () => {
    const cluster = (name: string) => ({ envoy_cluster_name: name });
    const alert = (labels: Record<string, string>, summary: string, severity = 'warning') => ({
      exp_labels: { ...labels, severity },
      exp_annotations: { summary },
    });
    const at = '16m';
    const tests = {
      rule_files: [RULES],
      evaluation_interval: '1m',
      tests: [
        {
          interval: '1m',
          input_series: inputSeries(first, second),
          promql_expr_test: [
            {
              // the community dashboard's query: one series per cluster that took traffic
              expr: 'count by (envoy_cluster_name) (sum(rate(envoy_cluster_upstream_rq_total[1m])) by (envoy_cluster_name) > 0)',
              eval_time: '10m',
              exp_samples: ['flaky', 'slow', 'web'].map((c) => ({
                labels: `{envoy_cluster_name="${c}"}`,
                value: 1,
              })),
            },
            {
              expr: 'count by (envoy_cluster_name) (envoy_cluster_name:upstream_rq_5xx:ratio_rate5m > 0.99)',
              eval_time: '10m',
              exp_samples: [{ labels: '{envoy_cluster_name="flaky"}', value: 1 }],
            },
            {
              expr: 'count by (envoy_cluster_name) (envoy_cluster_name:upstream_rq_time:p50_5m > 1000)',
              eval_time: '10m',
              exp_samples: [{ labels: '{envoy_cluster_name="slow"}', value: 1 }],
            },
            {
              expr: 'count by (envoy_http_conn_manager_prefix) (envoy_http_conn_manager_prefix:downstream_rq:rate5m > 0)',
              eval_time: '10m',
              exp_samples: [{ labels: '{envoy_http_conn_manager_prefix="ingress"}', value: 1 }],
            },
          ],
          alert_rule_test: [
            {
              alertname: 'EnvoyUpstreamErrorRatioHigh',
              eval_time: at,
              exp_alerts: [
                alert(cluster('flaky'), 'Cluster flaky: more than 5% of upstream requests answer 5xx'),
              ],
            },
            {
              alertname: 'EnvoyUpstreamLatencyHigh',
              eval_time: at,
              exp_alerts: [alert(cluster('slow'), 'Cluster slow: p99 upstream request time above 1 s')],
            },
            {
              alertname: 'EnvoyOutlierEjections',
              eval_time: at,
              exp_alerts: [alert(cluster('flaky'), 'Cluster flaky: hosts ejected by outlier detection')],
            },
            {
              alertname: 'EnvoyXdsUpdateRejected',
              eval_time: at,
              exp_alerts: [
                alert(
                  { instance: 'proxy-under-test' },
                  'proxy-under-test rejected xDS updates in 15 minutes: see its log and /config_dump',
                ),
              ],
            },
            {
              alertname: 'EnvoyControlPlaneDisconnected',
              eval_time: at,
              exp_alerts: [
                alert(
                  { instance: 'proxy-under-test', job: 'proxy' },
                  'proxy-under-test has had no connection to its management server for 5 minutes',
                  'critical',
                ),
              ],
            },
          ],
        },
      ],
    };
    const file = join(dir, 'scraped.test.yml');
    writeFileSync(file, stringify(tests));
    const run = promtool(['test', 'rules', file]);
    assert.equal(run.status, 0, run.output);
    assert.match(run.output, /SUCCESS/);
  });
});
