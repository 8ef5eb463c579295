import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { listenerBound } from '../../events/index.js';
import { adminBootstrap, scratchDir, startTestAdmin, type TestAdmin } from '../helpers/admin.js';
import { CERT, richBootstrap } from './fixtures.js';

const JSON_TYPE = 'application/json';
const TEXT = 'text/plain; charset=UTF-8';

async function body(res: Response, status: number, type: string): Promise<string> {
  assert.equal(res.status, status, `${res.url}: ${res.status}`);
  assert.equal(res.headers.get('content-type'), type, res.url);
  return res.text();
}

describe('admin endpoints', () => {
  let admin: TestAdmin;
  const scratch = scratchDir();
  before(async () => {
    admin = await startTestAdmin(richBootstrap(), { serviceZone: 'zone-z', drainTimeS: 3 });
  });
  after(async () => {
    await admin.close();
    scratch.remove();
  });

  it('/clusters text: version, breakers, outlier lines and every host field', async () => {
    const text = await body(await admin.get('/clusters'), 200, TEXT);
    const lines = text.split('\n');
    assert.equal(lines[0], 'version_info::static');
    for (const l of [
      'web::outlier::success_rate_average::-1',
      'web::outlier::local_origin_success_rate_ejection_threshold::-1',
      'web::default_priority::max_connections::1024',
      'web::high_priority::max_connections::7',
      'web::high_priority::max_retries::2',
      'web::added_via_api::false',
      'web::10.0.0.1:80::cx_total::0',
      'web::10.0.0.1:80::rq_timeout::0',
      'web::10.0.0.1:80::health_flags::healthy',
      'web::10.0.0.1:80::weight::5',
      'web::10.0.0.1:80::region::eu',
      'web::10.0.0.1:80::zone::eu-1',
      'web::10.0.0.1:80::sub_zone::rack1',
      'web::10.0.0.1:80::canary::true',
      'web::10.0.0.2:80::canary::false',
      'web::10.0.0.1:80::priority::0',
      'web::10.0.0.1:80::success_rate::-1',
      'web::10.0.0.1:80::local_origin_success_rate::-1',
      'dns::added_via_api::false',
    ])
      assert.ok(lines.includes(l), `missing ${l}`);
    assert.ok(!lines.some((l) => l.startsWith('dns::outlier')), 'no detector, no outlier lines');
  });

  it('/clusters shows the live figures the data plane provides', async () => {
    admin.ctx.figures.provide(() => ({
      hostStats: (c: string, a: string) =>
        c === 'web' && a === '10.0.0.1:80'
          ? {
              cx_total: 3,
              cx_active: 1,
              cx_connect_fail: 0,
              rq_total: 9,
              rq_timeout: 0,
              rq_success: 8,
              rq_error: 1,
              rq_active: 0,
            }
          : undefined,
      outlier: () => ({
        successRateAverage: 97.5,
        successRateEjectionThreshold: 80,
        localOriginSuccessRateAverage: -1,
        localOriginSuccessRateEjectionThreshold: -1,
      }),
      hostSuccessRate: () => ({ successRate: 88.9, localOriginSuccessRate: -1 }),
    }));
    const text = await (await admin.get('/clusters')).text();
    assert.match(text, /^web::10\.0\.0\.1:80::rq_total::9$/m);
    assert.match(text, /^web::outlier::success_rate_average::97\.5$/m);
    const json = await admin.getJson('/clusters?format=json');
    const web = json.cluster_statuses.find((c: { name: string }) => c.name === 'web');
    assert.deepEqual(web.success_rate_ejection_threshold, { value: 80 });
    const host = web.host_statuses[0];
    assert.deepEqual(
      host.stats.find((s: { name: string }) => s.name === 'rq_total'),
      { name: 'rq_total', value: '9' },
    );
    assert.deepEqual(
      host.stats.find((s: { name: string }) => s.name === 'cx_active'),
      {
        type: 'GAUGE',
        value: '1',
        name: 'cx_active',
      },
    );
    assert.deepEqual(host.success_rate, { value: 88.9 });
    admin.ctx.figures.provide(() => ({ hostStats: () => undefined }));
  });

  it('/clusters?format=json omits defaults and the DEFAULT priority', async () => {
    const json = await admin.getJson('/clusters?format=json');
    const web = json.cluster_statuses.find((c: { name: string }) => c.name === 'web');
    assert.equal(web.added_via_api, undefined);
    assert.deepEqual(web.circuit_breakers.thresholds, [
      { max_connections: 1024, max_pending_requests: 1024, max_requests: 1024, max_retries: 3 },
      {
        priority: 'HIGH',
        max_connections: 7,
        max_pending_requests: 1024,
        max_requests: 1024,
        max_retries: 2,
      },
    ]);
    const host = web.host_statuses[0];
    assert.deepEqual(host.address, { socket_address: { address: '10.0.0.1', port_value: 80 } });
    assert.equal(host.weight, 5);
    assert.deepEqual(host.locality, { region: 'eu', zone: 'eu-1', sub_zone: 'rack1' });
    assert.deepEqual(host.stats[0], { name: 'cx_connect_fail' });
    assert.deepEqual(host.health_status, { eds_health_status: 'HEALTHY' });
  });

  it('/certs reads every certificate a TLS context names', async () => {
    const json = JSON.parse(await body(await admin.get('/certs'), 200, JSON_TYPE));
    assert.equal(json.certificates.length, 1);
    const [chain] = json.certificates[0].cert_chain;
    assert.equal(chain.path, CERT);
    assert.equal(chain.serial_number, '1234abcd');
    assert.deepEqual(chain.subject_alt_names, [
      { dns: 'admin.test' },
      { ip_address: '127.0.0.1' },
      { uri: 'spiffe://proxy/test' },
    ]);
    assert.ok(Number(chain.days_until_expiration) > 36000);
    assert.match(chain.valid_from, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    assert.match(chain.expiration_time, /^21\d\d-/);
    assert.equal(json.certificates[0].ca_cert[0].path, CERT);
  });

  it('/certs without TLS is an empty list', async () => {
    const bare = await startTestAdmin(adminBootstrap());
    try {
      assert.equal(await (await bare.get('/certs')).text(), '{\n "certificates": []\n}\n');
    } finally {
      await bare.close();
    }
  });

  it('/server_info prints every field, the node with --service-* overrides', async () => {
    const info = JSON.parse(await body(await admin.get('/server_info'), 200, JSON_TYPE));
    assert.equal(info.state, 'LIVE');
    assert.equal(info.version.split('/').length, 5);
    assert.match(info.uptime_current_epoch, /^\d+s$/);
    assert.match(info.uptime_all_epochs, /^\d+s$/);
    assert.equal(info.hot_restart_version, '11.104');
    assert.equal(info.command_line_options.drain_time, '3s');
    assert.equal(info.command_line_options.base_id, '0');
    assert.equal(info.command_line_options.enable_mutex_tracing, false);
    assert.equal(info.node.id, 'node-1');
    assert.equal(info.node.cluster, 'cluster-a');
    assert.equal(info.node.locality.zone, 'zone-z');
    assert.deepEqual(info.node.metadata, { team: 'edge' });
    assert.equal(info.node.user_agent_name, 'proxy');
    assert.deepEqual(Object.keys(info.node.user_agent_build_version.version), [
      'major_number',
      'minor_number',
      'patch',
    ]);
    assert.deepEqual(info.node.extensions, []);
    assert.deepEqual(info.node.client_features, []);
    assert.deepEqual(info.node.listening_addresses, []);
  });

  it('/listeners shows the configured address, then the bound one', async () => {
    assert.equal(await body(await admin.get('/listeners'), 200, TEXT), 'ingress::127.0.0.1:0\n');
    admin.ctx.store.dispatch(listenerBound({ name: 'ingress', address: '127.0.0.1', port: 41234 }), 'test');
    assert.equal(await (await admin.get('/listeners')).text(), 'ingress::127.0.0.1:41234\n');
    const json = JSON.parse(await body(await admin.get('/listeners?format=json'), 200, JSON_TYPE));
    assert.deepEqual(json, {
      listener_statuses: [
        { name: 'ingress', local_address: { socket_address: { address: '127.0.0.1', port_value: 41234 } } },
      ],
    });
  });

  it('/init_dump lists clusters awaiting DNS; mask narrows it', async () => {
    const all = JSON.parse(await body(await admin.get('/init_dump'), 200, JSON_TYPE));
    assert.deepEqual(all, { unready_targets_dumps: [{ name: 'clusters', target_names: ['cluster dns'] }] });
    assert.equal(await (await admin.get('/init_dump?mask=listener')).text(), '{}\n');
    assert.equal((await admin.get('/init_dump?mask=bogus')).status, 400);
  });

  it('/ready and /server_info report DRAINING while health checks fail', async () => {
    assert.equal(await body(await admin.post('/healthcheck/fail'), 200, TEXT), 'OK\n');
    assert.equal(admin.ctx.store.state.server.healthCheckFailed, true);
    const ready = await admin.get('/ready');
    assert.equal(ready.status, 503);
    assert.equal(await ready.text(), 'DRAINING\n');
    assert.equal((await admin.getJson('/server_info')).state, 'DRAINING');
    assert.equal(await (await admin.post('/healthcheck/ok')).text(), 'OK\n');
    assert.equal((await admin.get('/ready')).status, 200);
  });

  it('/hot_restart_version, /memory, /contention', async () => {
    assert.equal(await body(await admin.get('/hot_restart_version'), 200, TEXT), '11.104');
    const memory = JSON.parse(await body(await admin.get('/memory'), 200, JSON_TYPE));
    assert.deepEqual(Object.keys(memory), [
      'allocated',
      'heap_size',
      'pageheap_unmapped',
      'pageheap_free',
      'total_thread_cache',
      'total_physical_bytes',
    ]);
    for (const v of Object.values(memory)) assert.match(String(v), /^\d+$/);
    assert.ok(Number(memory.total_physical_bytes) > 0);
    assert.match(
      await body(await admin.get('/contention'), 200, TEXT),
      /^Mutex contention tracing is not enabled/,
    );
  });

  it('/contention with --enable-mutex-tracing reports event-loop waits', async () => {
    const traced = await startTestAdmin(adminBootstrap(), { enableMutexTracing: true });
    try {
      const json = JSON.parse(await body(await traced.get('/contention'), 200, JSON_TYPE));
      assert.deepEqual(Object.keys(json), ['num_contentions', 'current_wait_cycles', 'lifetime_wait_cycles']);
      for (const v of Object.values(json)) assert.match(String(v), /^\d+$/);
    } finally {
      await traced.close();
    }
  });

  it('/reset_counters and /drain_listeners dispatch their events', async () => {
    const resets = admin.ctx.store.state.stats.countersResetSeq;
    assert.equal(await (await admin.post('/reset_counters')).text(), 'OK\n');
    assert.notEqual(admin.ctx.store.state.stats.countersResetSeq, resets);
    assert.equal(await (await admin.post('/drain_listeners?graceful&inboundonly')).text(), 'OK\n');
    assert.deepEqual(
      { ...admin.ctx.store.state.drain, startedAt: 0 },
      {
        active: true,
        inboundOnly: true,
        graceful: true,
        strategy: 'gradual',
        startedAt: 0,
        drainTimeMs: 3000,
      },
    );
  });

  it('/logging lists, sets one, several and all levels, and refuses bad names with 400', async () => {
    const list = await body(await admin.post('/logging'), 200, TEXT);
    assert.match(list, /^active loggers:\n {2}admin: \w+\n/);
    assert.match(await (await admin.post('/logging?upstream=debug')).text(), /\n {2}upstream: debug\n/);
    assert.equal(admin.ctx.store.state.logging.levels.upstream, 'debug');
    await admin.post('/logging?paths=admin=trace,config=error');
    assert.equal(admin.ctx.store.state.logging.levels.admin, 'trace');
    assert.equal(admin.ctx.store.state.logging.levels.config, 'error');
    await admin.post('/logging?level=warning');
    assert.ok(Object.values(admin.ctx.store.state.logging.levels).every((l) => l === 'warning'));
    const seq = admin.ctx.store.state.seq;
    for (const q of ['level=warn', 'nosuchlogger=info', 'paths=admin=loud']) {
      const res = await admin.post(`/logging?${q}`);
      assert.equal(res.status, 400, q);
      assert.match(
        await res.text(),
        /^usage: \/logging\?<name>=<level> \(change single level\)\n.*levels: trace debug info warning error critical off \n/s,
      );
    }
    assert.equal(admin.ctx.store.state.seq, seq, 'a refused /logging changed nothing');
  });

  it('/reopen_logs and /tap answer as documented', async () => {
    assert.equal(await body(await admin.post('/reopen_logs'), 200, TEXT), 'OK\n');
    const tap = await admin.post('/tap', 'config_id: my_tap\ntap_config: {}\n', 'application/yaml');
    assert.equal(tap.status, 400);
    assert.equal(await tap.text(), "Unknown config id 'my_tap'. No extension has registered with this id.\n");
    assert.equal((await admin.post('/tap')).status, 400);
  });

  it('/cpuprofiler and /heapprofiler write profiles to admin.profile_path', async () => {
    const path = join(scratch.dir, 'proxy.prof');
    const prof = await startTestAdmin(
      adminBootstrap({
        admin: { profile_path: path, address: { socket_address: { address: '127.0.0.1', port_value: 0 } } },
      }),
    );
    try {
      for (const p of ['/cpuprofiler', '/heapprofiler', '/cpuprofiler?enable=maybe']) {
        const res = await prof.post(p);
        assert.equal(res.status, 400, p);
        assert.equal(await res.text(), '?enable=<y|n>\n');
      }
      assert.equal(await (await prof.post('/cpuprofiler?enable=y')).text(), 'OK\n');
      assert.equal(await (await prof.post('/cpuprofiler?enable=n')).text(), 'OK\n');
      assert.ok(Array.isArray(JSON.parse(readFileSync(path, 'utf8')).nodes));
      assert.equal((await prof.post('/heapprofiler?enable=n')).status, 400);
      assert.equal((await prof.post('/heapprofiler?enable=y')).status, 200);
      assert.equal((await prof.post('/heapprofiler?enable=y')).status, 400);
      assert.equal((await prof.post('/heapprofiler?enable=n')).status, 200);
      assert.ok(existsSync(`${path}.heapprofile`));
      assert.ok(JSON.parse(readFileSync(`${path}.heapprofile`, 'utf8')).head);
    } finally {
      await prof.close();
    }
  });

  it('/heap_dump streams a V8 heap snapshot', async () => {
    const res = await admin.get('/heap_dump');
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('content-type'), 'application/octet-stream');
    const snapshot = JSON.parse(await res.text());
    assert.ok(snapshot.snapshot.meta.node_fields.includes('name'));
  });

  it('/ serves the HTML home page with a link per read and a POST form per mutation', async () => {
    const html = await body(await admin.get('/'), 200, 'text/html; charset=UTF-8');
    assert.match(html, /<a href='clusters'>clusters<\/a>/);
    assert.match(html, /<form action='quitquitquit' method='post'><button>quitquitquit<\/button>/);
    assert.match(html, /<form action='cpuprofiler' method='post'>.*<select name='enable'>/);
    assert.doesNotMatch(html, /<a href='quitquitquit'/);
  });
});
