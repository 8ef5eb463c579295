import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Browser } from 'playwright-core';
import { startTestAdmin, type TestAdmin } from '../helpers/admin.js';
import { launchChromium, noChromium } from '../helpers/chromium.js';
import { richBootstrap } from './fixtures.js';

/** The page's DOM as the in-browser callback uses it (the project compiles without the DOM lib). */
declare const document: {
  querySelectorAll(selector: string): Iterable<{ href: string; getAttribute(name: string): string | null }>;
};

/** The read endpoints of the admin area: a bare GET of each answers 200. */
const OURS = new Set([
  'certs',
  'clusters',
  'config_dump',
  'contention',
  'help',
  'hot_restart_version',
  'init_dump',
  'listeners',
  'memory',
  'ready',
  'runtime',
  'server_info',
]);

/** POST endpoints whose home-page form, sent as is, gets a documented refusal. */
const EXPECTED_REFUSALS: Record<string, number> = {
  runtime_modify: 400, // no key=value given
  tap: 400, // needs a TapRequest body
};

describe('admin home page in headless Chromium', { skip: noChromium }, () => {
  let admin: TestAdmin;
  let browser: Browser;
  before(async () => {
    admin = await startTestAdmin(richBootstrap());
    browser = await launchChromium();
  });
  after(async () => {
    await browser?.close();
    await admin?.close();
  });

  it('every link answers', async () => {
    const page = await browser.newPage();
    await page.goto(`${admin.base}/`);
    assert.equal(await page.title(), 'Proxy Admin');
    // The browser's own fetch; headers are enough (streaming endpoints never end their body).
    // The browser's own fetch, one link at a time; headers are enough (a streaming
    // endpoint never ends its body), so each body is abandoned once the status is known.
    const results = await page.evaluate(async () => {
      const out: Array<{ href: string | null; status: number | string }> = [];
      // `/heap_dump` blocks the loop for seconds while V8 writes the snapshot; endpoints.test.ts covers it.
      for (const a of document.querySelectorAll('a:not([href="heap_dump"])')) {
        const controller = new AbortController();
        const timer = setTimeout(() => controller.abort(), 15_000);
        const status = await fetch(a.href, { signal: controller.signal }).then(
          (res) => res.status,
          () => 'no answer within 15 s',
        );
        clearTimeout(timer);
        controller.abort();
        out.push({ href: a.getAttribute('href'), status });
      }
      return out;
    });
    assert.ok(results.length >= 10, `only ${results.length} links`);
    for (const r of results) {
      assert.equal(typeof r.status, 'number', `${r.href}: ${r.status}`);
      // Anything but an internal error is an answer (503 from a feature that is off, for one).
      assert.notEqual(r.status, 500, `${r.href} answered ${r.status}`);
      // Other areas' endpoints may refuse a bare GET (missing parameters, feature off); ours all answer 200.
      if (OURS.has(String(r.href))) assert.equal(r.status, 200, `${r.href} answered ${r.status}`);
    }
    await page.click("a[href='clusters']");
    assert.match((await page.textContent('body')) ?? '', /^version_info::static/);
    await page.close();
  });

  it('every POST button works, /quitquitquit last', async () => {
    const page = await browser.newPage();
    await page.goto(`${admin.base}/`);
    const actions = await page.$$eval("form[method='post']", (forms) =>
      forms.map((f) => f.getAttribute('action')!),
    );
    assert.ok(actions.includes('quitquitquit') && actions.includes('healthcheck/fail'));
    const ordered = [...actions.filter((a) => a !== 'quitquitquit'), 'quitquitquit'];
    for (const action of ordered) {
      await page.goto(`${admin.base}/`);
      const form = page.locator(`form[action='${action}']`);
      // Choose the first real value of every select (e.g. enable=y) so the request is complete.
      for (const select of await form.locator('select').all()) {
        const first = await select.locator('option:not([value=""])').first().getAttribute('value');
        if (first) await select.selectOption(first);
      }
      const [response] = await Promise.all([
        page.waitForResponse(
          (r) => r.url().startsWith(`${admin.base}/${action}`) && r.request().method() === 'POST',
        ),
        form.locator('button').click(),
      ]);
      assert.equal(
        response.status(),
        EXPECTED_REFUSALS[action] ?? 200,
        `${action} answered ${response.status()}`,
      );
    }
    // The code is reported once the shutdown steps ran (the admin closes gracefully first).
    const deadline = Date.now() + 5000;
    while (admin.shutdownCodes.length === 0 && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 20));
    assert.deepEqual(admin.shutdownCodes, [0]);
    await page.close();
  });
});
