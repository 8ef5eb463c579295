/**
 * `GET /debug/bundle`: one redacted JSON document with the event log since a point and the
 * admin's views, which `proxy replay` opens like an event log.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { activeHealthChanged, runtimeModified } from '../../events/index.js';
import { adminBootstrap, startTestAdmin, type TestAdmin } from '../helpers/admin.js';
import { runProxy } from '../helpers/cli.js';
import { cluster } from '../helpers/event-log.js';

const KEY = 'SECRET-KEY-b0d1e5';

describe('/debug/bundle', () => {
  let admin: TestAdmin;
  const dir = mkdtempSync(join(tmpdir(), 'bundle-test-'));
  let healthSeq = 0;
  before(async () => {
    admin = await startTestAdmin(
      adminBootstrap({
        node: { id: 'edge-1', metadata: { tls: { private_key: { inline_string: KEY } } } },
        static_resources: { clusters: [cluster('api', ['10.0.0.1:80', '10.0.0.2:80'])] },
      }),
      {},
      { history: {} },
    );
    healthSeq = admin.ctx.store.dispatch(
      activeHealthChanged({ cluster: 'api', address: '10.0.0.2:80', healthy: false }),
      'health_check',
    ).seq;
    admin.ctx.store.dispatch(runtimeModified({ values: { 'feature.canary': 'on' } }), 'admin');
  });
  after(async () => {
    await admin?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('holds the event log and every view, redacted, as an attachment', async () => {
    const res = await admin.get('/debug/bundle');
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('content-type'), 'application/json');
    assert.match(
      res.headers.get('content-disposition') ?? '',
      /^attachment; filename="proxy-bundle-.*\.json"$/,
    );
    const text = await res.text();
    assert.ok(!text.includes(KEY), 'the private key is in the bundle');
    const bundle = JSON.parse(text);
    assert.equal(bundle.format, 'proxy-debug-bundle');
    assert.equal(bundle.version, 1);
    assert.equal(bundle.server_info.state, 'LIVE');
    assert.ok(Array.isArray(bundle.config_dump.configs));
    assert.ok(Array.isArray(bundle.stats.stats));
    assert.equal(bundle.clusters.cluster_statuses[0].name, 'api');
    assert.equal(bundle.runtime.entries['feature.canary'].final_value, 'on');
    assert.ok(bundle.memory.allocated);
    assert.equal(bundle.event_log.from_seq, 0);
    assert.equal(bundle.event_log.events, 4);
    assert.match(
      bundle.config_dump.configs[0].bootstrap.node.metadata.tls.private_key.inline_string,
      /redacted/,
    );
  });

  it('holds each page as its JSON answer reads: the data form and the page agree', async () => {
    const bundle = await admin.getJson('/debug/bundle');
    assert.deepEqual(bundle.config_dump, await admin.getJson('/config_dump'));
    assert.deepEqual(bundle.clusters, await admin.getJson('/clusters?format=json'));
    assert.deepEqual(bundle.listeners, await admin.getJson('/listeners?format=json'));
    assert.deepEqual(bundle.runtime, await admin.getJson('/runtime'));
    assert.deepEqual(Object.keys(bundle.memory), Object.keys(await admin.getJson('/memory')));
    const info = await admin.getJson('/server_info');
    assert.deepEqual(
      { ...bundle.server_info, uptime_current_epoch: '', uptime_all_epochs: '' },
      {
        ...info,
        uptime_current_epoch: '',
        uptime_all_epochs: '',
      },
    );
  });

  it('opens in proxy replay: the timeline, and the views as they were live', async () => {
    const file = join(dir, 'bundle.json');
    writeFileSync(file, await (await admin.get('/debug/bundle')).text());
    const timeline = await runProxy(['replay', file, '--timeline']);
    assert.equal(timeline.code, 0, timeline.stderr);
    assert.match(
      timeline.stdout,
      /health_check {2}health\/active-changed {2}cluster api: host 10\.0\.0\.2:80 failed/,
    );
    assert.match(
      timeline.stdout,
      /admin {2}runtime\/modified {2}runtime \(admin layer\): feature\.canary=on/,
    );
    assert.match(timeline.stderr, /listed 4 of 4 events/);
    const clusters = await runProxy(['replay', file, '--view', 'clusters']);
    assert.equal(clusters.code, 0, clusters.stderr);
    // No traffic ran: the live host counters are zero too, so the two read the same.
    assert.equal(clusters.stdout, await (await admin.get('/clusters')).text());
    const config = await runProxy(['replay', file, '--view', 'config_dump']);
    assert.ok(!config.stdout.includes(KEY));
  });

  it('starts the log at a point, kept within what is retained', async () => {
    const bundle = await admin.getJson(`/debug/bundle?since=${healthSeq}`);
    assert.equal(bundle.event_log.from_seq, healthSeq);
    assert.equal(bundle.event_log.events, 1);
    const file = join(dir, 'since.json');
    writeFileSync(file, JSON.stringify(bundle));
    // From the checkpoint at the health event: the host is already failed there.
    const replayed = await runProxy(['replay', file, '--view', 'clusters']);
    assert.equal(replayed.code, 0, replayed.stderr);
    assert.match(replayed.stdout, /api::10\.0\.0\.2:80::health_flags::\/failed_active_hc/);
    assert.match(replayed.stderr, /from the checkpoint at seq/);
    const recent = await admin.getJson('/debug/bundle?since=-1h');
    assert.equal(recent.event_log.from_seq, 0);
    // A damaged bundle is named in the error, not the temporary copy of its log.
    const damaged = join(dir, 'damaged.json');
    writeFileSync(
      damaged,
      JSON.stringify({ ...bundle, event_log: { ndjson: `${bundle.event_log.ndjson}oops\n` } }),
    );
    const broken = await runProxy(['replay', damaged, '--timeline']);
    assert.equal(broken.code, 1);
    assert.match(
      broken.stderr,
      new RegExp(`error: ${damaged.replaceAll('.', '\\.')} \\(its event log\\):4: not JSON`),
    );
    const bad = await admin.get('/debug/bundle?since=yesterday');
    assert.equal(bad.status, 400);
    assert.match(await bad.text(), /'since': 'yesterday' is not/);
  });
});
