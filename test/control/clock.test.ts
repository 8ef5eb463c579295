/**
 * Root cause: the control plane's clock was the wall clock (`Date.now()`, RxJS's default
 * scheduler): envelope stamps, merge windows and outlier ejections measured durations between
 * its readings. A step back of the wall clock (NTP, `date -s`, a resumed VM) made them
 * negative: an ejected host stayed out, and the merge window held its cluster's health
 * updates, for as long as the step, an hour here. The clock is now the wall-clock time of the
 * start moved on by the monotonic clock (`src/control/clock.ts`), as the reference's timers
 * are monotonic. The test steps only the proxy's wall clock, with libfaketime (Debian's
 * `faketime`), leaving its monotonic clock alone.
 */
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { clockNow } from '../../src/control/clock.js';
import { hcmWithRoutes, httpBootstrap } from '../helpers/bootstraps.js';
import { cleanupsAfterAll } from '../helpers/cleanups.js';
import { cluster } from '../helpers/dataplane.js';
import { type ProxyProcess, startProxyProcess } from '../helpers/proxy-process.js';
import { until } from '../helpers/xds-fixtures.js';

const FAKETIME = '/usr/lib/x86_64-linux-gnu/faketime/libfaketimeMT.so.1';
const dir = mkdtempSync(join(tmpdir(), 'clock-'));
const cleanups = cleanupsAfterAll(() => rmSync(dir, { recursive: true, force: true }));

test('the clock moves with the monotonic clock, from the wall clock at the start', () => {
  const a = clockNow();
  assert.ok(Math.abs(a - Date.now()) < 1000, 'it starts on the wall clock');
  assert.ok(clockNow() >= a);
});

test('a step back of the wall clock by an hour: an ejected host comes back after base_ejection_time, not an hour later', {
  skip: existsSync(FAKETIME) ? false : `no ${FAKETIME} (apt-get install faketime)`,
  timeout: 120_000,
}, async () => {
  const status = { a: 500 };
  const servers = ['a', 'b'].map((name) =>
    http.createServer((_req, res) => res.writeHead(name === 'a' ? status.a : 200).end(name)),
  );
  for (const s of servers) {
    await new Promise<void>((resolve) => s.listen(0, '127.0.0.1', resolve));
    cleanups.push(() => {
      s.closeAllConnections();
      s.close();
    });
  }
  const [a, b] = servers.map((s) => (s.address() as AddressInfo).port) as [number, number];
  const offset = join(dir, 'offset');
  writeFileSync(offset, '+0');
  // The default update_merge_window (1 s) stays: its windows are measured on the same clock.
  const web = cluster('web', [a, b], {
    outlier_detection: {
      consecutive_5xx: 3,
      interval: '0.2s',
      base_ejection_time: '1s',
      max_ejection_percent: 100,
      enforcing_success_rate: 0,
    },
  });
  const proxy: ProxyProcess = await startProxyProcess(
    httpBootstrap([web], hcmWithRoutes([{ match: { prefix: '/' }, route: { cluster: 'web' } }], 'ingress')),
    ['--concurrency', '2'],
    60_000,
    {
      LD_PRELOAD: FAKETIME,
      FAKETIME_TIMESTAMP_FILE: offset,
      FAKETIME_CACHE_DURATION: '1',
      FAKETIME_DONT_FAKE_MONOTONIC: '1',
    },
  );
  cleanups.push(() => proxy.stop());
  const port = await proxy.listenerPort('http');
  const flags = async () =>
    new RegExp(`^web::127\\.0\\.0\\.1:${a}::health_flags::(.*)$`, 'm').exec(
      (await proxy.get('/clusters')).body,
    )?.[1];
  await until(
    'a ejected',
    async () => {
      await fetch(`http://127.0.0.1:${port}/`).then((r) => r.text());
      return (await flags()) === '/failed_outlier_check';
    },
    30_000,
  );
  status.a = 200;
  writeFileSync(offset, '-3600');
  const stepped = Date.now();
  await until('a back', async () => (await flags()) === 'healthy', 30_000);
  const tookMs = Date.now() - stepped;
  const stats = (await proxy.get('/stats?filter=outlier_detection.ejections_active')).body;
  assert.match(stats, /cluster\.web\.outlier_detection\.ejections_active: 0/);
  assert.ok(tookMs < 30_000, `back after ${tookMs} ms`);
});
