import assert from 'node:assert/strict';
import { request } from 'node:http';
import { test } from 'node:test';
import { startStatsAdmin } from '../helpers/stats-admin.js';

test('recent lookups endpoints over HTTP: POST only, then the table', async () => {
  const admin = await startStatsAdmin();
  try {
    assert.equal((await fetch(`${admin.base}/stats/recentlookups/enable`)).status, 400);
    const enable = await fetch(`${admin.base}/stats/recentlookups/enable`, { method: 'POST' });
    assert.equal(await enable.text(), 'OK\n');
    admin.ctx.stats.counter('looked.up');
    const table = await (await fetch(`${admin.base}/stats/recentlookups`)).text();
    assert.match(table, /^ {3}Count Lookup\n {7}1 looked\.up\n\ntotal: \d+\n$/);
    const stats = await fetch(`${admin.base}/stats?filter=^server\\.stats_recent_lookups$`);
    assert.match(await stats.text(), /^server\.stats_recent_lookups: [1-9]\d*\n$/);
  } finally {
    await admin.close();
  }
});

test('hystrix_event_stream: 404 without the sink', async () => {
  const admin = await startStatsAdmin();
  try {
    const res = await fetch(`${admin.base}/hystrix_event_stream`);
    assert.equal(res.status, 404);
    assert.match(await res.text(), /stat_sinks\.hystrix/);
  } finally {
    await admin.close();
  }
});

test('hystrix_event_stream: one record per flush per cluster, with the spec adaptations', async () => {
  const admin = await startStatsAdmin({
    stats_flush_interval: '0.100s',
    // As the loader leaves it: the sink's name resolved into its config type.
    stats_sinks: [
      {
        name: 'envoy.stat_sinks.hystrix',
        typed_config: { '@type': 'type.googleapis.com/envoy.config.metrics.v2.HystrixSink' },
      },
    ],
    static_resources: { clusters: [{ name: 'svc:a', connect_timeout: '1s' }] },
  });
  try {
    const s = admin.ctx.stats;
    s.counter('cluster.svc_a.upstream_rq_2xx').add(8);
    s.counter('cluster.svc_a.upstream_rq_pending_overflow').add(2);
    const text = await new Promise<string>((resolve, reject) => {
      const req = request(`${admin.base}/hystrix_event_stream`, (res) => {
        assert.equal(res.headers['content-type'], 'text/event-stream');
        let buf = '';
        res.on('data', (chunk) => {
          buf += chunk;
          // the first flush sets the baseline; counts seen after it are rolled from there
          if (buf.split('HystrixCommand').length > 1) {
            req.destroy();
            resolve(buf);
          }
        });
      });
      req.on('error', reject);
      req.end();
    });
    const line = text.split('\n').find((l) => l.startsWith('data: {"type":"HystrixCommand"'));
    assert.ok(line, text);
    const cmd = JSON.parse(line.slice('data: '.length));
    assert.equal(cmd.name, 'svc_a');
    assert.equal(cmd.propertyValue_circuitBreakerForceClosed, true);
    assert.equal(cmd.rollingCountShortCircuited, 0);
    assert.equal(typeof cmd.latencyExecute['99.5'], 'number');
    assert.ok(text.includes('"type":"HystrixThreadPool"'));
  } finally {
    await admin.close();
  }
});
