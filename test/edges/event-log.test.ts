/**
 * The event log's flush bound: with the default `--file-flush-interval-msec` (10 s), events
 * that no admin answer waits for (discovery, health checks) sat in memory for up to 10 s,
 * and a kill -9 lost them. They are now written within 1 s whatever the option says.
 */
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { runtimeModified } from '../../events/index.js';
import { DEFAULT_OPTIONS } from '../../src/cli/parse.js';
import { MAX_FLUSH_INTERVAL_MS } from '../../src/edges/event-log.js';
import { adminBootstrap, scratchDir, startTestAdmin } from '../helpers/admin.js';

test('an event no admin answer waits for is in the file within 1 s with the default flush interval', async () => {
  assert.equal(DEFAULT_OPTIONS.fileFlushIntervalMsec, 10_000, 'the default is what the finding was about');
  const scratch = scratchDir();
  const log = join(scratch.dir, 'events.ndjson');
  const admin = await startTestAdmin(adminBootstrap(), { eventLog: log });
  try {
    const sent = Date.now();
    admin.ctx.store.dispatch(runtimeModified({ values: { from_discovery: 'yes' } }), 'dns');
    while (!(existsSync(log) && readFileSync(log, 'utf8').includes('from_discovery'))) {
      assert.ok(Date.now() - sent < MAX_FLUSH_INTERVAL_MS + 500, 'not written within the bound');
      await new Promise((r) => setTimeout(r, 20));
    }
  } finally {
    await admin.close();
    scratch.remove();
  }
});
