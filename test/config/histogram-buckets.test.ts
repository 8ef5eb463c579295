/**
 * `stats_config.histogram_bucket_settings` (Istio's stats inclusion options) compiled and
 * acting: the first matching entry gives a histogram its bucket bounds in `/stats`' bucket
 * modes (text and JSON) and in Prometheus, the others keep the defaults; bad bounds and
 * matchers are refused by their path.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { JsonObject } from '../../events/index.js';
import { Report } from '../../src/bootstrap/report.js';
import { compileStatsConfig } from '../../src/config/histogram-buckets.js';
import { compiledStatsSettings } from '../../src/config/stats.js';
import { DEFAULT_BUCKETS } from '../../src/stats/bins.js';
import { HistogramBuckets } from '../../src/stats/buckets.js';
import { StatsStore } from '../../src/stats/store.js';
import { TagProducer } from '../../src/stats/tags.js';
import { bodyText } from '../../views/result.js';
import { streamStats } from '../../views/stats/index.js';
import { bootstrapOf, errorsOf, loadYaml } from '../helpers/bootstrap.js';
import { LOOPBACK_ADMIN } from '../helpers/bootstraps.js';
import { startProxyProcess } from '../helpers/proxy-process.js';

const SETTINGS = `
stats_config:
  histogram_bucket_settings:
    - match: { prefix: cluster.web. }
      buckets: [100, 1, 10]
    - match: { safe_regex: { google_re2: {}, regex: "cluster\\\\..*" } }
      buckets: [2]
      bins: 50
`;

describe('histogram_bucket_settings', () => {
  const bootstrap = bootstrapOf(loadYaml(SETTINGS)) as unknown as JsonObject;
  const buckets = new HistogramBuckets(compiledStatsSettings(bootstrap).buckets);

  it('gives each histogram the bounds of the first entry matching its full name, sorted', () => {
    assert.deepEqual(buckets.of('cluster.web.upstream_rq_time'), [1, 10, 100]);
    assert.deepEqual(buckets.of('cluster.api.upstream_rq_time'), [2]);
    assert.equal(buckets.of('http.admin.downstream_rq_time'), DEFAULT_BUCKETS);
  });

  it('acts on /stats bucket modes (text, JSON) and Prometheus', () => {
    const store = new StatsStore();
    for (const v of [0, 5, 50, 500]) store.histogram('cluster.web.upstream_rq_time').record(v);
    store.histogram('http.admin.downstream_rq_time').record(3);
    store.flush();
    const render = (query: string, preset?: 'prometheus') =>
      bodyText(
        streamStats(store, new TagProducer(), new URLSearchParams(query), preset, 'proxy', buckets).body,
      );
    assert.match(
      render('histogram_buckets=cumulative&filter=web'),
      /^cluster\.web\.upstream_rq_time: B1\(1,1\) B10\(2,2\) B100\(3,3\)$/m,
    );
    const json = JSON.parse(render('format=json&histogram_buckets=disjoint&filter=web')) as {
      stats: Array<{ histograms: Array<{ buckets: Array<{ upper_bound: number; interval: number }> }> }>;
    };
    assert.deepEqual(
      json.stats[0]?.histograms[0]?.buckets.map((b) => [b.upper_bound, b.interval]),
      [
        [1, 1],
        [10, 1],
        [100, 1],
      ],
    );
    const prometheus = render('', 'prometheus');
    assert.match(prometheus, /proxy_cluster_upstream_rq_time_bucket\{proxy_cluster_name="web",le="10"\} 2\n/);
    assert.match(
      prometheus,
      /proxy_cluster_upstream_rq_time_bucket\{proxy_cluster_name="web",le="\+Inf"\} 4\n/,
    );
    assert.doesNotMatch(prometheus, /cluster_name="web",le="0.5"/);
    // the defaults elsewhere
    assert.match(
      prometheus,
      /proxy_http_downstream_rq_time_bucket\{proxy_http_conn_manager_prefix="admin",le="3600000"\} 1/,
    );
  });

  it('refuses bad bounds and matchers by their path; bins is advisory', () => {
    const errors = errorsOf(
      loadYaml(`
stats_config:
  histogram_bucket_settings:
    - buckets: [1]
    - match: { safe_regex: { google_re2: {}, regex: "(" } }
      buckets: [1]
    - match: { exact: a }
      buckets: [0, 5, 5, -1]
`),
    ).join('\n');
    for (const expected of [
      /stats_config\.histogram_bucket_settings\[0\]\.match: required field missing/,
      /stats_config\.histogram_bucket_settings\[1\]\.match.*invalid regex '\('/,
      /stats_config\.histogram_bucket_settings\[2\]\.buckets\[0\]: 0 is not a bucket bound/,
      /stats_config\.histogram_bucket_settings\[2\]\.buckets\[2\]: 5 is given twice/,
      /stats_config\.histogram_bucket_settings\[2\]\.buckets\[3\]: -1 is not a bucket bound/,
    ])
      assert.match(errors, expected);
    const report = new Report('test');
    compileStatsConfig(
      { histogram_bucket_settings: [{ match: { prefix: 'a' }, bins: 10 }] },
      'stats_config',
      report,
    );
    assert.equal(report.failed, false);
    assert.match(report.warnings.join('\n'), /HistogramBucketSettings\.bins is accepted but has no effect/);
  });

  it('malformed values never throw', () => {
    for (const raw of [
      { histogram_bucket_settings: 'x' },
      { histogram_bucket_settings: [null, 3, { buckets: 'x' }] },
    ]) {
      const report = new Report('test');
      compileStatsConfig(raw as JsonObject, 'stats_config', report);
    }
  });

  it('a proxy with two workers serves its /stats/prometheus and /stats with them', async () => {
    const proxy = await startProxyProcess(
      {
        admin: LOOPBACK_ADMIN,
        stats_config: {
          histogram_bucket_settings: [{ match: { prefix: 'server.initialization' }, buckets: [3, 7] }],
        },
      },
      ['--concurrency', '2'],
    );
    try {
      await proxy.get('/ready');
      const prometheus = (await proxy.get('/stats/prometheus')).body;
      assert.match(prometheus, /^proxy_server_initialization_time_ms_bucket\{le="7"\} 0$/m);
      assert.doesNotMatch(prometheus, /initialization_time_ms_bucket\{le="0.5"\}/);
      const text = (await proxy.get('/stats?histogram_buckets=cumulative&filter=initialization_time_ms'))
        .body;
      assert.match(text, /^server\.initialization_time_ms: B3\(0,0\) B7\(0,0\)$/m);
    } finally {
      await proxy.stop();
    }
  });
});
