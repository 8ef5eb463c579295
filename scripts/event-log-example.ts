/**
 * The worked example of docs/event-log.md, recorded for real: a proxy in front of two
 * upstreams under steady traffic goes through an outage of one upstream (its health check
 * takes it out: clients see nothing), a bad runtime change, the same outage again (now
 * clients see 503s) and a drain; then headless Chromium takes the screenshots the page
 * shows and the incident bundle is replayed on the command line.
 *
 *   node --import tsx scripts/event-log-example.ts [OUT_DIR]
 *
 * OUT_DIR defaults to docs/img/event-log. Needs Debian's Chromium (scripts/install-system-deps.sh).
 * Local times are printed in the zone of `TZ` (the committed screenshots: Europe/Paris).
 */
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { hcmWithRoutes, httpBootstrap } from '../test/helpers/bootstraps.js';
import { launchChromium } from '../test/helpers/chromium.js';
import { repoRoot, runProxy } from '../test/helpers/cli.js';
import { startProxyProcess } from '../test/helpers/proxy-process.js';

const out = process.argv[2] ?? join(repoRoot, 'docs/img/event-log');
mkdirSync(out, { recursive: true });
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const log = (line: string) => process.stdout.write(`${line}\n`);

/** An upstream that answers 503 to everything, health checks included, while `failing`. */
async function upstream(): Promise<{ server: Server; port: number; failing: boolean }> {
  const state = { server: undefined as unknown as Server, port: 0, failing: false };
  state.server = createServer((_req, res) => {
    res.statusCode = state.failing ? 503 : 200;
    res.end('ok\n');
  });
  await new Promise<void>((resolve) => state.server.listen(0, '127.0.0.1', resolve));
  state.port = (state.server.address() as AddressInfo).port;
  return state;
}

const a = await upstream();
const b = await upstream();
const bootstrap = httpBootstrap(
  [
    {
      name: 'api',
      connect_timeout: '1s',
      load_assignment: {
        cluster_name: 'api',
        endpoints: [
          {
            lb_endpoints: [a, b].map((u) => ({
              endpoint: { address: { socket_address: { address: '127.0.0.1', port_value: u.port } } },
            })),
          },
        ],
      },
      health_checks: [
        {
          timeout: '0.2s',
          interval: '0.25s',
          no_traffic_interval: '0.25s',
          unhealthy_threshold: 1,
          healthy_threshold: 1,
          http_health_check: { path: '/health' },
        },
      ],
    },
  ],
  hcmWithRoutes([{ match: { prefix: '/' }, route: { cluster: 'api' } }]),
);
bootstrap.layered_runtime = {
  layers: [
    { name: 'static', static_layer: {} },
    { name: 'admin', admin_layer: {} },
  ],
};
const proxy = await startProxyProcess(bootstrap);
const port = await proxy.listenerPort('http');
log(`proxy admin ${proxy.admin}, listener 127.0.0.1:${port}, upstreams a=:${a.port} b=:${b.port}`);

let stop = false;
const traffic = (async () => {
  const end = Date.now() + 120_000;
  while (!stop && Date.now() < end) {
    await fetch(`http://127.0.0.1:${port}/`)
      .then((r) => r.text())
      .catch(() => '');
    await sleep(25);
  }
})();

const browser = await launchChromium();
try {
  // The active stats page watches the whole incident: 60 refreshes of 0.25 s.
  const stats = await browser.newPage({ viewport: { width: 1100, height: 560 } });
  await stats.goto(`${proxy.admin}/stats?format=active-html`);
  await stats.fill('#interval', '0.25');
  await stats.dispatchEvent('#interval', 'change');
  await stats.fill(
    '#filter',
    '^cluster\\.api\\.(upstream_rq_(2xx|5xx|time)|health_check\\.(failure|healthy)|lb_healthy_panic|membership_healthy)',
  );
  await stats.dispatchEvent('#filter', 'change');
  await sleep(2000);
  // Upstream a fails for 1.5 s: its health check takes it out and b serves everything.
  log('outage 1: upstream a fails for 1.5 s');
  a.failing = true;
  await sleep(1500);
  a.failing = false;
  await sleep(1500);
  // The bad change: with a panic threshold of 100 %, one unhealthy host of two puts the
  // cluster in panic, and panic balances over every host, failed ones included.
  log('bad runtime change: upstream.healthy_panic_threshold=100');
  await proxy.post('/runtime_modify?upstream.healthy_panic_threshold=100');
  await sleep(1500);
  log('outage 2: upstream a fails for 1.5 s again; this time clients see 503s');
  a.failing = true;
  await sleep(1500);
  a.failing = false;
  await sleep(1000);
  log('drain: POST /drain_listeners?graceful');
  await proxy.post('/drain_listeners?graceful');
  await sleep(1000);

  const events = JSON.parse((await proxy.get('/events')).body) as {
    events: Array<{ seq: number; event: { type: string; healthy?: boolean; ejected?: boolean } }>;
  };
  const failures = events.events.filter(
    (e) => e.event.type === 'health/active-changed' && e.event.healthy === false,
  );
  const [first, second] = failures;
  const change = events.events.find((e) => e.event.type === 'runtime/modified');
  log(
    `health failures at seq ${failures.map((e) => e.seq).join(', ')}, runtime change at seq ${change?.seq}`,
  );

  const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
  const shot = async (name: string) => {
    await page.screenshot({ path: join(out, name), fullPage: false });
    log(`wrote ${join(out, name)}`);
  };
  await page.goto(`${proxy.admin}/events?format=html&live=off`);
  await shot('timeline.png');
  await page.goto(`${proxy.admin}/events?format=html&type=health/,runtime/,listener/&live=off`);
  if (change) await page.locator(`#seq-${change.seq} details.patch summary`).click();
  await shot('timeline-filtered.png');
  if (second) {
    await page.goto(`${proxy.admin}/clusters?format=html&refresh=0&at=${second.seq}`);
    await shot('clusters-at-failure.png');
  }
  await page.goto(`${proxy.admin}/clusters?format=html&refresh=0`);
  await shot('clusters-now.png');
  await stats.screenshot({ path: join(out, 'active-stats.png') });
  log(`wrote ${join(out, 'active-stats.png')}`);
  await browser.close();

  const bundle = join(mkdtempSync(join(tmpdir(), 'event-log-example-')), 'bundle.json');
  writeFileSync(bundle, (await proxy.get('/debug/bundle')).body);
  for (const args of [
    ['--timeline', '--type', 'health/,runtime/,listener/'],
    ['--diff', `${first?.seq ?? 0}..${second?.seq ?? ''}`],
  ]) {
    const run = await runProxy(['replay', bundle, ...args]);
    log(`\n$ proxy replay bundle.json ${args.join(' ')}\n${run.stdout}${run.stderr}`);
  }
} finally {
  await browser.close();
  stop = true;
  await traffic;
  await proxy.stop();
  a.server.close();
  b.server.close();
}
