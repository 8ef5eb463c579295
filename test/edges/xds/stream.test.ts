/**
 * The control plane as an operator watches it. Root causes of issue 30's findings:
 * `control_plane.connected_state` was set by the first response, not by the stream, so a
 * management server with nothing to push (or restarted) left it 0; accepted updates logged
 * nothing; a server re-sending its bad response after each NACK had every copy decoded,
 * compiled, logged and recorded (thousands of rows pushing history out); and
 * `rate_limit_settings` was accepted and did nothing.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { type ProxyProcess, startProxyProcess } from '../../helpers/proxy-process.js';
import { ADMIN, adsConfig, httpListener, staticCluster, statValue, until } from '../../helpers/xds-fixtures.js';
import { XdsServer } from '../../helpers/xds-server.js';

const ADS = { ads: {}, initial_fetch_timeout: '1s' };

const goodCluster = (name: string) => ({ ...staticCluster(name, [9]), connect_timeout: '1s' });
const badCluster = (name: string) => ({ ...staticCluster(name, [9]), connect_timeout: '0s' });

function bootstrap(xdsPort: number, ads: object = adsConfig()): object {
  return {
    admin: ADMIN,
    dynamic_resources: { cds_config: ADS, ads_config: ads },
    static_resources: {
      listeners: [httpListener('in', 'web')],
      clusters: [staticCluster('xds_cluster', [xdsPort], true)],
    },
  };
}

interface EventsPage {
  events: Array<{ event: { type: string; name?: string; count?: number } }>;
}

describe('control_plane.connected_state follows the stream', () => {
  let xds: XdsServer;
  let proxy: ProxyProcess;

  before(async () => {
    // Nothing to push: the stream is up, no response ever comes.
    xds = await XdsServer.start();
    proxy = await startProxyProcess(bootstrap(xds.port) as never, ['--concurrency', '1']);
  });
  after(async () => {
    await proxy?.stop();
    await xds?.stop();
  });

  it('is 1 once the stream is established, before any push; 0 when it drops; 1 again on reconnect', async () => {
    await xds.waitFor((r) => r.type_url.endsWith('Cluster'));
    await until(
      'connected_state 1',
      async () => (await statValue(proxy, 'control_plane.connected_state')) === 1,
    );
    const port = xds.port;
    await xds.stop();
    await until(
      'connected_state 0',
      async () => (await statValue(proxy, 'control_plane.connected_state')) === 0,
    );
    await xds.listen(port);
    await until(
      'connected_state 1 after the restart, still without a push',
      async () => (await statValue(proxy, 'control_plane.connected_state')) === 1,
      40_000,
    );
    assert.equal(xds.requests.filter((r) => r.answers).length, 0, 'nothing was ever pushed');
  });
});

describe('a storm of identical rejections', () => {
  let xds: XdsServer;
  let proxy: ProxyProcess;

  before(async () => {
    xds = await XdsServer.start();
    xds.resendOnNack = true;
    xds.set('cds', [goodCluster('web')], 'c1');
    proxy = await startProxyProcess(bootstrap(xds.port) as never, ['--concurrency', '1']);
  });
  after(async () => {
    await proxy?.stop();
    await xds?.stop();
  });

  it('logs accepted updates at info as the reference does', async () => {
    await xds.ack('cds', 'c1');
    await until('the cds line', async () =>
      proxy.stderr().includes('cds: add 1 cluster(s), remove 0 cluster(s)'),
    );
  });

  it('is one rejection event and one count event, one warning line and a report; history is not evicted', async () => {
    const from = xds.requests.length;
    xds.set('cds', [goodCluster('web'), badCluster('bad')], 'c2');
    await xds.nack('cds', 10_000, from);
    await until(
      'a storm of NACKs',
      async () => xds.requests.slice(from).filter((r) => r.error_detail).length > 300,
      30_000,
    );
    // The server stops re-sending: the count is reported at the storm's end (the next response).
    xds.resendOnNack = false;
    xds.set('cds', [goodCluster('web')], 'c3');
    await xds.ack('cds', 'c3');
    const nacks = xds.requests.slice(from).filter((r) => r.error_detail).length;
    const page = JSON.parse((await proxy.get('/events?limit=1000')).body) as EventsPage;
    const rejected = page.events.filter((e) => e.event.type === 'cluster/update-rejected');
    assert.equal(rejected.length, 1, 'the first rejection is the one rejection event');
    const again = page.events.filter((e) => e.event.type === 'discovery/rejected-again');
    assert.ok(again.length >= 1 && again.length <= 3, `a few count events, not ${again.length}`);
    const counted = again.reduce((n, e) => n + (e.event.count ?? 0), 0);
    assert.equal(counted + 1, nacks, 'every NACK is counted');
    assert.ok(
      page.events.some((e) => e.event.type === 'server/bootstrap-loaded'),
      'the start of history is still there',
    );
    const warnings = proxy
      .stderr()
      .split('\n')
      .filter((l) => l.includes("Cluster 'bad'"));
    assert.ok(warnings.length <= 4, `a few warning lines, not ${warnings.length}`);
    const timeline = (await proxy.get('/events?format=html')).body;
    assert.match(timeline, /CDS update rejected again \d+ times \(identical response, version c2\)/);
  });
});

describe('rate_limit_settings', () => {
  let xds: XdsServer;
  let proxy: ProxyProcess;

  before(async () => {
    xds = await XdsServer.start();
    xds.resendOnNack = true;
    xds.set('cds', [goodCluster('web')], 'c1');
    const ads = { ...adsConfig(), rate_limit_settings: { max_tokens: 3, fill_rate: 2 } };
    proxy = await startProxyProcess(bootstrap(xds.port, ads) as never, ['--concurrency', '1']);
  });
  after(async () => {
    await proxy?.stop();
    await xds?.stop();
  });

  it('holds the requests of a storm to the token bucket (max_tokens, fill_rate a second)', async () => {
    await xds.ack('cds', 'c1');
    const from = xds.requests.length;
    xds.set('cds', [badCluster('bad')], 'c2');
    await xds.nack('cds', 10_000, from);
    const started = Date.now();
    await new Promise((r) => setTimeout(r, 3000));
    const seconds = (Date.now() - started) / 1000;
    const nacks = xds.requests.slice(from).filter((r) => r.error_detail).length;
    // At most the bucket's 3 plus 2 a second (and the first one), with room for a slow machine.
    assert.ok(nacks <= 3 + Math.ceil(seconds * 2) + 2, `${nacks} NACKs in ${seconds} s`);
    assert.ok(nacks >= 3, `the bucket let requests through (${nacks})`);
    assert.ok(((await statValue(proxy, 'control_plane.rate_limit_enforced')) ?? 0) > 0);
  });
});
