/**
 * The pictures of live stats in headless Chromium, on a real proxy process under traffic:
 * `/stats?format=active-html` draws a sparkline per counter and gauge and bars per
 * histogram; `/clusters?format=html` shows each host's state, weight, success rate and
 * request rate, coloured by state.
 */
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import type { Browser } from 'playwright-core';
import { hcmWithRoutes, httpBootstrap } from '../helpers/bootstraps.js';
import { launchChromium, noChromium } from '../helpers/chromium.js';
import { cluster } from '../helpers/event-log.js';
import { type ProxyProcess, startProxyProcess } from '../helpers/proxy-process.js';
import { type Trickle, trickle } from '../helpers/trickle.js';

describe('stats and cluster pictures under traffic', { skip: noChromium }, () => {
  let proxy: ProxyProcess;
  let browser: Browser;
  let upstream: Server;
  let port = 0;
  let traffic: Trickle | undefined;

  before(async () => {
    upstream = createServer((req, res) => {
      // One request in five fails, so success rates read below 100%.
      res.statusCode = Number(req.url?.slice(1)) % 5 === 0 ? 503 : 200;
      res.end('ok');
    });
    await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
    const upstreamPort = (upstream.address() as AddressInfo).port;
    proxy = await startProxyProcess(
      httpBootstrap(
        [cluster('svc', [`127.0.0.1:${upstreamPort}`])],
        hcmWithRoutes([{ match: { prefix: '/' }, route: { cluster: 'svc' } }]),
      ),
    );
    port = await proxy.listenerPort('http');
    browser = await launchChromium();
    // Steady traffic until the tests are done: a request every 20 ms, bounded to 60 s.
    traffic = trickle((i) => `http://127.0.0.1:${port}/${i}`);
  });
  after(async () => {
    await traffic?.stop();
    await browser?.close();
    await proxy?.stop();
    await new Promise((resolve) => upstream?.close(resolve));
  });

  it('active-html draws sparklines for counters and gauges and bars for histograms', async () => {
    const page = await browser.newPage();
    await page.goto(`${proxy.admin}/stats?format=active-html`);
    await page.fill('#interval', '0.2');
    await page.dispatchEvent('#interval', 'change');
    await page.fill('#filter', '^cluster\\.svc\\.');
    await page.dispatchEvent('#filter', 'change');
    const counter = page.locator("tr.stat.counter:has(td:text-is('cluster.svc.upstream_rq_total'))");
    // Enough refreshes for a line of several points.
    await page.waitForFunction(
      "(document.querySelector('tr.stat.counter svg.sparkline polyline')?.getAttribute('points') || '').split(' ').length >= 5",
      null,
      { timeout: 15_000 },
    );
    const points = ((await counter.locator('polyline').getAttribute('points')) ?? '').split(' ');
    assert.ok(points.length >= 5, `${points.length} points`);
    // The counter moves under traffic: its change per interval is above zero somewhere.
    assert.match(
      (await counter.locator('svg title').textContent()) ?? '',
      /^change per interval: min 0, max [1-9]/,
    );
    const gauge = page.locator('tr.stat.gauge svg.sparkline');
    assert.ok((await gauge.count()) > 0, 'a gauge sparkline');
    await page.waitForSelector('tr.stat.histogram svg.bars.quantiles rect', {
      state: 'attached',
      timeout: 15_000,
    });
    const histogram = page.locator("tr.stat.histogram:has(td:text-is('cluster.svc.upstream_rq_time'))");
    assert.equal(await histogram.locator('svg.quantiles rect').count(), 9);
    assert.ok((await histogram.locator('svg.buckets rect').count()) > 0, 'bucket bars');
    assert.match((await histogram.locator('td').nth(1).textContent()) ?? '', /^P50 \d/);
    // No number arrays: the value column of a histogram is a short reading.
    assert.doesNotMatch((await page.textContent('#active-stats')) ?? '', /\[\d/);
    await page.close();
  });

  it('/clusters?format=html shows each host with state, weight, success and request rate', async () => {
    const page = await browser.newPage();
    await page.goto(`${proxy.admin}/clusters?format=html&refresh=0`);
    await new Promise((r) => setTimeout(r, 1200));
    await page.reload();
    const row = page.locator('#cluster-svc tr.host');
    assert.equal(await row.count(), 1);
    assert.equal(await row.getAttribute('class'), 'host healthy');
    assert.equal(await row.locator('td.state').textContent(), 'healthy');
    assert.equal(await row.locator('td.weight').textContent(), '1');
    assert.ok(Number(await row.locator('td.rq_total').textContent()) > 10);
    const success = Number.parseFloat((await row.locator('td.success').textContent()) ?? '');
    assert.ok(success > 60 && success < 95, `success rate ${success}`);
    assert.match((await row.locator('td.rate').textContent()) ?? '', /^\d+\.\d\/s$/);
    assert.ok(Number.parseFloat((await row.locator('td.rate').textContent()) ?? '') > 1);
    await page.close();
  });
});
