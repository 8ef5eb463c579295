/**
 * The event timeline (`/events?format=html`) in headless Chromium: reached from the home
 * page, every event with local and UTC time and its summary, the filters as a form and as
 * query parameters, the JSON Patch and the `?at=` links of an event, and live follow.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { activeHealthChanged, outlierChanged, runtimeModified } from '../../events/index.js';
import { adminBootstrap, startTestAdmin, type TestAdmin } from '../helpers/admin.js';
import { launchChromium, noChromium } from '../helpers/chromium.js';
import { cluster } from '../helpers/event-log.js';

// Local time an hour east of UTC in November: the two columns differ.
process.env.TZ = 'Europe/Paris';

const rowSeqs = (page: Page) =>
  page.$$eval('tr.event', (rows) => rows.map((r) => Number(r.getAttribute('data-seq'))));

describe('event timeline in headless Chromium', { skip: noChromium }, () => {
  let admin: TestAdmin;
  let browser: Browser;
  const shots = mkdtempSync(join(tmpdir(), 'timeline-shots-'));
  before(async () => {
    admin = await startTestAdmin(
      adminBootstrap({
        static_resources: {
          clusters: [cluster('api', ['10.0.0.1:80', '10.0.0.3:80']), cluster('web', ['10.0.0.9:80'])],
        },
      }),
      {},
      { history: {} },
    );
    const { store } = admin.ctx;
    store.dispatch(
      activeHealthChanged({ cluster: 'api', address: '10.0.0.1:80', healthy: false }),
      'health_check',
    );
    store.dispatch(
      outlierChanged({ cluster: 'api', address: '10.0.0.3:80', ejected: true, reason: 'consecutive_5xx' }),
      'outlier',
    );
    store.dispatch(runtimeModified({ values: { 'feature.canary': 'on' } }), 'admin');
    store.dispatch(
      activeHealthChanged({ cluster: 'web', address: '10.0.0.9:80', healthy: false }),
      'health_check',
    );
    browser = await launchChromium();
  });
  after(async () => {
    await browser?.close();
    await admin?.close();
    rmSync(shots, { recursive: true, force: true });
  });

  it('lists every event from the home page, with local and UTC time, summary, patch and links', async () => {
    const page = await browser.newPage();
    await page.goto(`${admin.base}/`);
    await page.click("a[href='events?format=html']");
    assert.equal(await page.title(), 'Event timeline');
    // bootstrap, LIVE, then the four above.
    assert.deepEqual(await rowSeqs(page), [1, 2, 3, 4, 5, 6]);
    const ejected = page.locator('#seq-4');
    assert.equal(
      await ejected.locator('.summary').textContent(),
      'cluster api: host 10.0.0.3:80 ejected by outlier detection (consecutive 5xx)',
    );
    assert.match(
      (await ejected.locator('.local').textContent()) ?? '',
      /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3} \+01:00$/,
    );
    assert.match(
      (await ejected.locator('.utc').textContent()) ?? '',
      /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/,
    );
    assert.equal(await ejected.locator('td.source').textContent(), 'outlier');
    // The patch is collapsed until opened.
    const patch = ejected.locator('details.patch');
    assert.equal(await patch.locator('pre').isVisible(), false);
    await patch.locator('summary').click();
    const ops = JSON.parse((await patch.locator('pre').textContent()) ?? '') as Array<{
      op: string;
      path: string;
      value: { at?: number; reason?: string } | boolean;
    }>;
    assert.deepEqual(ops[0], {
      op: 'replace',
      path: '/clusters/api/hosts/10.0.0.3:80/failedOutlierCheck',
      value: true,
    });
    assert.deepEqual(
      ops.slice(1).map((op) => [op.op, op.path, typeof op.value === 'object' ? op.value.reason : op.value]),
      [['add', '/clusters/api/hosts/10.0.0.3:80/lastEjection', 'consecutive_5xx']],
    );
    const shot = join(shots, 'timeline.png');
    await page.screenshot({ path: shot, fullPage: true });
    assert.deepEqual([...readFileSync(shot).subarray(1, 4)], [...Buffer.from('PNG')]);
    // Every snapshot view is linked at this point; the clusters view shows the host ejected then.
    const views = await ejected
      .locator('td.views a')
      .evaluateAll((as) => as.map((a) => a.getAttribute('href')));
    for (const view of ['clusters', 'config_dump', 'listeners', 'runtime', 'server_info']) {
      assert.ok(views.includes(`${view}?at=4`), `${view}?at=4 not in ${views.join(' ')}`);
    }
    await ejected.locator("a[href='clusters?at=4']").click();
    const clusters = (await page.textContent('body')) ?? '';
    assert.match(clusters, /api::10\.0\.0\.3:80::health_flags::\/failed_outlier_check/);
    // ...and the runtime change that came after is not in it yet.
    await page.goto(`${admin.base}/runtime?at=4`);
    assert.doesNotMatch((await page.textContent('body')) ?? '', /feature\.canary/);
    await page.close();
  });

  it('filters through the form into query parameters', async () => {
    const page = await browser.newPage();
    await page.goto(`${admin.base}/events?format=html`);
    await page.fill("input[name='cluster']", 'api');
    await page.fill("input[name='type']", 'health/');
    await Promise.all([page.waitForURL(/cluster=api/), page.click("form#filters button[type='submit']")]);
    const url = new URL(page.url());
    assert.equal(url.searchParams.get('cluster'), 'api');
    assert.equal(url.searchParams.get('type'), 'health/');
    assert.deepEqual(await rowSeqs(page), [3, 4]);
    await page.goto(`${admin.base}/events?format=html&host=10.0.0.9&source=health_check`);
    assert.deepEqual(await rowSeqs(page), [6]);
    await page.goto(`${admin.base}/events?format=html&until=4&live=off`);
    assert.deepEqual(await rowSeqs(page), [1, 2, 3, 4]);
    await page.goto(`${admin.base}/events?format=html&from=-1h&type=runtime/`);
    assert.deepEqual(await rowSeqs(page), [5]);
    const bad = await page.goto(`${admin.base}/events?format=html&from=yesterday`);
    assert.equal(bad?.status(), 400);
    assert.match((await page.textContent('.problem')) ?? '', /'from': 'yesterday' is not a sequence number/);
    await page.close();
  });

  it('follows new events live, with the filters of the page', async () => {
    const page = await browser.newPage();
    await page.goto(`${admin.base}/events?format=html&cluster=api`);
    await page.waitForFunction(
      () => document.getElementById('live-status')?.textContent === 'following live',
      null,
      {
        timeout: 5000,
      },
    );
    const { store } = admin.ctx;
    // Another cluster's event is filtered out; api's next one arrives.
    store.dispatch(
      activeHealthChanged({ cluster: 'web', address: '10.0.0.9:80', healthy: true }),
      'health_check',
    );
    const back = store.dispatch(
      activeHealthChanged({ cluster: 'api', address: '10.0.0.1:80', healthy: true }),
      'health_check',
    );
    const row = page.locator(`#seq-${back.seq}`);
    await row.waitFor({ timeout: 5000 });
    assert.equal(
      await row.locator('.summary').textContent(),
      'cluster api: host 10.0.0.1:80 passes its active health check again',
    );
    await row.locator('details.patch summary').click();
    const ops = JSON.parse((await row.locator('pre').textContent()) ?? '') as Array<{
      op: string;
      path: string;
      value: unknown;
    }>;
    assert.deepEqual(
      ops
        .map((op) => [op.op, op.path, op.path.endsWith('At') ? typeof op.value : op.value])
        .sort((a, b) => String(a[1]).localeCompare(String(b[1]))),
      [
        ['replace', '/clusters/api/hosts/10.0.0.1:80/activeHcChangedAt', 'number'],
        ['replace', '/clusters/api/hosts/10.0.0.1:80/failedActiveHc', false],
      ],
    );
    // The bootstrap names cluster api too.
    assert.deepEqual(await rowSeqs(page), [1, 3, 4, back.seq]);
    assert.match((await page.textContent('#live-status')) ?? '', new RegExp(`last event seq ${back.seq}`));
    await page.screenshot({ path: join(shots, 'timeline-live.png') });
    await page.close();
  });
});

/** The page's DOM as the in-browser callbacks use it (the project compiles without the DOM lib). */
declare const document: { getElementById(id: string): { textContent: string | null } | null };
