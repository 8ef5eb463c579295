/**
 * What an operator sees first, in headless Chromium against a real proxy process (two
 * workers) under traffic: the home page's state, epoch and listeners; a sparkline of the
 * active stats page read out under the pointer; the clusters page's last checks, ejections
 * and buttons, a button's POST reflected by the page, a GET of a mutation refused; no
 * buttons under --admin-read-only. The screenshots go to ADMIN_SHOTS (docs/img/admin for
 * docs/admin.md) or a scratch directory.
 */
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { hcmWithRoutes, httpBootstrap } from '../helpers/bootstraps.js';
import { launchChromium, noChromium } from '../helpers/chromium.js';
import { cluster } from '../helpers/dataplane.js';
import { type ProxyProcess, startProxyProcess } from '../helpers/proxy-process.js';
import { type Trickle, trickle } from '../helpers/trickle.js';

/** An upstream answering `status` to everything, health checks included. */
async function upstream(status: number): Promise<{ server: Server; port: number }> {
  const server = createServer((_req, res) => {
    res.statusCode = status;
    res.end('x');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, port: (server.address() as AddressInfo).port };
}

const shotsDir = process.env.ADMIN_SHOTS ?? mkdtempSync(join(tmpdir(), 'admin-shots-'));
mkdirSync(shotsDir, { recursive: true });

async function shoot(page: Page, name: string): Promise<void> {
  const path = join(shotsDir, name);
  await page.screenshot({ path });
  assert.deepEqual([...readFileSync(path).subarray(1, 4)], [...Buffer.from('PNG')]);
}

/** The page's rows of one cluster's host table, reloaded until `ready` holds for them (10 s at most). */
async function clustersWhen(page: Page, url: string, ready: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + 10_000;
  await page.goto(url);
  while (!(await ready())) {
    if (Date.now() > deadline) throw new Error(`the clusters page did not get there within 10 s`);
    await new Promise((r) => setTimeout(r, 250));
    await page.reload();
  }
}

describe('operator pages in headless Chromium', { skip: noChromium }, () => {
  let proxy: ProxyProcess;
  let readOnly: ProxyProcess;
  let browser: Browser;
  const upstreams: Server[] = [];
  let good = 0;
  let bad = 0;
  let flaky = 0;
  let port = 0;
  let traffic: Trickle | undefined;

  before(async () => {
    const [g, b, f] = await Promise.all([upstream(200), upstream(503), upstream(503)]);
    upstreams.push(g!.server, b!.server, f!.server);
    [good, bad, flaky] = [g!.port, b!.port, f!.port];
    const bootstrap = httpBootstrap(
      [
        cluster('svc', [good, bad], {
          health_checks: [
            {
              timeout: '0.5s',
              interval: '0.2s',
              no_traffic_interval: '0.2s',
              unhealthy_threshold: 1,
              healthy_threshold: 1,
              http_health_check: { path: '/healthz' },
            },
          ],
        }),
        cluster('flaky', [flaky], {
          outlier_detection: {
            consecutive_5xx: 3,
            interval: '0.1s',
            base_ejection_time: '120s',
            max_ejection_percent: 100,
          },
        }),
      ],
      hcmWithRoutes([
        { match: { prefix: '/flaky' }, route: { cluster: 'flaky' } },
        { match: { prefix: '/' }, route: { cluster: 'svc' } },
      ]),
    );
    proxy = await startProxyProcess(bootstrap, ['--concurrency', '2']);
    readOnly = await startProxyProcess(bootstrap, ['--admin-read-only']);
    port = await proxy.listenerPort('http');
    browser = await launchChromium();
    // Steady traffic to both clusters until the tests are done, bounded to 90 s.
    traffic = trickle((i) => `http://127.0.0.1:${port}/${i % 4 === 0 ? 'flaky/' : ''}${i}`, 20, 90_000);
  });
  after(async () => {
    await traffic?.stop();
    await browser?.close();
    await proxy?.stop();
    await readOnly?.stop();
    for (const server of upstreams) await new Promise((resolve) => server.close(resolve));
    if (!process.env.ADMIN_SHOTS) rmSync(shotsDir, { recursive: true, force: true });
  });

  it('the home page opens with LIVE, the epoch, the listeners and the healthy hosts', async () => {
    const page = await browser.newPage({ viewport: { width: 1000, height: 620 } });
    await page.goto(`${proxy.admin}/`);
    assert.equal(await page.textContent('#server-state'), 'LIVE');
    assert.equal(await page.textContent('#epoch'), '0');
    assert.match((await page.textContent('#version')) ?? '', /^[0-9a-f]+\/\d+\.\d+\.\d+/);
    assert.match((await page.textContent('#uptime')) ?? '', /^\d+s$|^\d+m/);
    const listener = page.locator('table.listeners tbody tr');
    assert.deepEqual(await listener.locator('td').allTextContents(), ['http', `127.0.0.1:${port}`, 'active']);
    // svc's second host fails its checks, flaky's one host is ejected soon: 1 or 2 of 3 healthy.
    assert.match((await page.textContent('#healthy-hosts')) ?? '', /^[12] of 3 hosts healthy$/);
    await shoot(page, 'home.png');
    await page.click('#timeline');
    assert.equal(await page.title(), 'Event timeline');
    await page.close();
  });

  it('a sparkline reads out the value and time of the sample under the pointer, on a time axis', async () => {
    const page = await browser.newPage({ viewport: { width: 1000, height: 360 } });
    await page.goto(`${proxy.admin}/stats?format=active-html`);
    await page.fill('#interval', '0.2');
    await page.dispatchEvent('#interval', 'change');
    await page.fill('#filter', '^cluster\\.svc\\.upstream_(rq_total|rq_2xx|cx_active|rq_active)$');
    await page.dispatchEvent('#filter', 'change');
    const row = page.locator("tr.stat.counter:has(td:text-is('cluster.svc.upstream_rq_total'))");
    await page.waitForFunction(
      "(document.querySelector('tr.stat.counter svg.sparkline polyline')?.getAttribute('points') || '').split(' ').length >= 8",
      null,
      { timeout: 20_000 },
    );
    const svg = row.locator('svg.sparkline');
    assert.equal(await svg.getAttribute('width'), '320');
    const ticks = await svg.locator('text.tick').allTextContents();
    assert.equal(ticks.length, 3);
    assert.match(ticks[0]!, /^-\d+s$/);
    assert.equal(ticks[2], 'now');
    // Near the right end: the latest samples, where traffic has been flowing.
    await svg.hover({ position: { x: 300, y: 15 } });
    await page.waitForFunction(
      "/^\\+\\d+ in the interval at \\d\\d:\\d\\d:\\d\\d \\((now|-\\d+s)\\)$/.test(document.querySelector(\"tr.stat.counter svg.sparkline[data-name='cluster.svc.upstream_rq_total'] + .readout\")?.textContent || '')",
      null,
      { timeout: 20_000 },
    );
    const readout = (await row.locator('.readout').textContent()) ?? '';
    assert.ok(Number(/^\+(\d+)/.exec(readout)?.[1]) > 0, readout);
    assert.equal(await svg.locator('circle.marker').getAttribute('visibility'), 'visible');
    await shoot(page, 'active-stats.png');
    await page.mouse.move(5, 5);
    await page.waitForFunction(
      "document.querySelector(\"svg.sparkline[data-name='cluster.svc.upstream_rq_total'] + .readout\")?.textContent === ''",
      null,
      { timeout: 20_000 },
    );
    await page.close();
  });

  it('the clusters page shows last checks and ejections, and its buttons POST and show the result', async () => {
    const page = await browser.newPage({ viewport: { width: 1440, height: 400 } });
    const url = `${proxy.admin}/clusters?format=html&refresh=0`;
    const host = (p: number) => page.locator(`tr.host[data-address='127.0.0.1:${p}']`);
    await clustersWhen(page, url, async () =>
      /^ejected /.test((await host(flaky).locator('td.ejection').textContent()) ?? ''),
    );
    assert.match((await host(good).locator('td.check').textContent()) ?? '', /^passed \d+s ago/);
    assert.match((await host(good).locator('td.check').textContent()) ?? '', /passing since \d+[sm]/);
    assert.match((await host(bad).locator('td.check').textContent()) ?? '', /^failed \d+s ago$/);
    assert.equal(await host(bad).getAttribute('class'), 'host failed');
    assert.match(
      (await host(flaky).locator('td.ejection').textContent()) ?? '',
      /^ejected \d+s ago \(consecutive 5xx\)$/,
    );
    assert.equal(await host(good).locator('td.ejection').textContent(), '—');
    // The request rate from two readings a second apart, without waiting for a reload.
    await page.waitForFunction(
      `/^\\d+\\.\\d\\/s$/.test(document.querySelector("tr.host[data-address='127.0.0.1:${good}'] td.rate")?.textContent || '')`,
      null,
      { timeout: 20_000 },
    );
    assert.ok(Number.parseFloat((await host(good).locator('td.rate').textContent()) ?? '') > 1);
    assert.equal(await page.textContent('#server-state'), 'LIVE');
    await shoot(page, 'clusters.png');

    // A GET of a mutating path changes nothing.
    const get = await page.request.get(`${proxy.admin}/healthcheck/fail`);
    assert.equal(get.status(), 400);
    assert.equal((await proxy.get('/ready')).status, 200);

    /** Presses the button of `action`: it POSTs, the page reloads showing the state and the answer. */
    const press = async (action: string, state: string, ready: number) => {
      const posted = page.waitForRequest((r) => r.url() === `${proxy.admin}/${action}`);
      const reloaded = page.waitForEvent('load');
      await page.click(`#actions form[action='${action}'] button`);
      assert.equal((await posted).method(), 'POST');
      await reloaded;
      assert.equal(await page.textContent('#server-state'), state);
      assert.equal(await page.textContent('#action-status'), `${action}: 200 OK`);
      assert.equal((await proxy.get('/ready')).status, ready);
    };
    await press('healthcheck/fail', 'DRAINING', 503);
    await page.setViewportSize({ width: 1440, height: 130 });
    await shoot(page, 'clusters-draining.png');
    await press('healthcheck/ok', 'LIVE', 200);
    await page.close();
  });

  it('has no buttons under --admin-read-only (disabled ones on the home page), and the mutations stay refused', async () => {
    const page = await browser.newPage();
    await page.goto(`${readOnly.admin}/clusters?format=html&refresh=0`);
    assert.equal(await page.locator('#cluster-svc tr.host').count(), 2);
    assert.equal(await page.locator('#actions').count(), 0);
    assert.equal(await page.locator('form').count(), 0);
    assert.equal(await page.textContent('#server-state'), 'LIVE');
    await page.goto(`${readOnly.admin}/`);
    assert.equal(await page.textContent('#read-only'), 'admin read-only');
    assert.equal(await page.locator("form[method='post']").count(), 0);
    assert.equal(await page.locator("button:text-is('healthcheck/fail')").isDisabled(), true);
    const post = await page.request.post(`${readOnly.admin}/healthcheck/fail`);
    assert.equal(post.status(), 403);
    assert.equal((await readOnly.get('/ready')).status, 200);
    await page.close();
  });
});
