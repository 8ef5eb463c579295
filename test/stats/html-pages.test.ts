import assert from 'node:assert/strict';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { launchChromium, noChromium } from '../helpers/chromium.js';
import { startStatsAdmin } from '../helpers/stats-admin.js';

test('stats HTML pages in headless Chromium', {
  skip: noChromium,
}, async (t) => {
  const admin = await startStatsAdmin();
  const browser = await launchChromium();
  t.after(async () => {
    await browser.close();
    await admin.close();
  });
  const s = admin.ctx.stats;
  s.counter('cluster.alpha.upstream_rq_total').add(1);
  s.counter('cluster.beta.upstream_rq_total').add(1);

  await t.test('format=html: typing a filter updates the list', async () => {
    const page = await browser.newPage();
    await page.goto(`${admin.base}/stats?format=html`);
    assert.match((await page.textContent('#stats')) ?? '', /cluster\.alpha\.upstream_rq_total: 1/);
    await page.fill('#filter', 'beta');
    await Promise.all([page.waitForURL(/filter=beta/), page.press('#filter', 'Enter')]);
    const text = (await page.textContent('#stats')) ?? '';
    assert.match(text, /cluster\.beta\.upstream_rq_total: 1/);
    assert.doesNotMatch(text, /alpha/);
    assert.equal(await page.inputValue('#filter'), 'beta');
    await page.close();
  });

  await t.test('format=active-html: refreshes, ranks by changes, stops when closed', async () => {
    const page = await browser.newPage();
    await page.goto(`${admin.base}/stats?format=active-html`);
    await page.fill('#interval', '0.1');
    await page.dispatchEvent('#interval', 'change');
    await page.fill('#filter', 'upstream_rq_total');
    await page.dispatchEvent('#filter', 'change');
    const beta = s.counter('cluster.beta.upstream_rq_total');
    for (let i = 0; i < 6; i++) {
      beta.inc();
      await sleep(150);
    }
    // a string runs in the page, where `document` exists (this file compiles without DOM types)
    await page.waitForFunction(
      "document.querySelector('#active-stats tr td')?.textContent === 'cluster.beta.upstream_rq_total'",
    );
    const rows = await page.$$eval('#active-stats tr', (trs) => trs.length);
    assert.equal(rows, 2);
    const before = admin.hits.get('/stats') ?? 0;
    assert.ok(before > 3, `the page polled /stats (${before} requests)`);
    await page.close();
    await sleep(100);
    const atClose = admin.hits.get('/stats') ?? 0;
    await sleep(600);
    assert.equal(admin.hits.get('/stats'), atClose, 'no request after the tab closed');
  });
});
