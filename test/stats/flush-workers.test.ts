/**
 * The primary's stats flush with `--concurrency 2` is the flush of every process (the workers
 * run no flush timer of their own): the histograms' interval summary in `/stats` covers the
 * workers' requests of one flush interval, and the flush after it empties it again.
 */
import assert from 'node:assert/strict';
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import { test } from 'node:test';
import type { JsonObject } from '../../events/config.js';
import { hcmWithRoutes, httpBootstrap } from '../helpers/bootstraps.js';
import { cluster } from '../helpers/dataplane.js';
import { type ProxyProcess, startProxyProcess } from '../helpers/proxy-process.js';

const DELAY_MS = 30;

function get(port: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = http.get({ host: '127.0.0.1', port, path: '/', agent: false }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.setTimeout(5000, () => req.destroy(new Error('GET timed out')));
    req.on('error', reject);
  });
}

/** The interval and cumulative P100 of `cluster.web.upstream_rq_time` in `/stats`. */
function p100(body: string): [string, string] {
  const m = /cluster\.web\.upstream_rq_time: .*P100\(([^,]+),([^)]+)\)/.exec(body);
  assert.ok(m, body);
  return [m[1] as string, m[2] as string];
}

/**
 * A slow upstream behind a `--concurrency 2` proxy (the bootstrap plus `extra`) that has served
 * 8 requests, for `check`; both are stopped after it.
 */
async function withWorkersAndTraffic(
  extra: JsonObject,
  check: (proxy: ProxyProcess, traffic: () => Promise<void>) => Promise<void>,
): Promise<void> {
  const web = http.createServer((_req, res) => {
    setTimeout(() => res.end('ok'), DELAY_MS);
  });
  await new Promise<void>((r) => web.listen(0, '127.0.0.1', r));
  const proxy = await startProxyProcess(
    {
      ...httpBootstrap(
        [cluster('web', [(web.address() as AddressInfo).port])],
        hcmWithRoutes([{ match: { prefix: '/' }, route: { cluster: 'web' } }]),
      ),
      ...extra,
    },
    ['--concurrency', '2'],
  );
  try {
    const port = await proxy.listenerPort('http');
    const traffic = async () => {
      const statuses = await Promise.all(Array.from({ length: 8 }, () => get(port)));
      assert.deepEqual(statuses, Array(8).fill(200));
    };
    await traffic();
    await check(proxy, traffic);
  } finally {
    await proxy.stop();
    web.closeAllConnections();
    web.close();
  }
}

test('with workers, the primary flush closes the workers interval windows', async () => {
  await withWorkersAndTraffic({ stats_flush_interval: '0.200s' }, async (proxy, traffic) => {
    const seen: string[] = [];
    const summary = async () => {
      const body = (await proxy.get('/stats?filter=cluster\\.web\\.upstream_rq_time$')).body;
      seen.push(body);
      return p100(body);
    };
    const until = async (
      check: (interval: string, cumulative: string) => boolean,
      what: string,
      meanwhile: () => Promise<unknown> = () => new Promise((r) => setTimeout(r, 50)),
    ) => {
      const deadline = Date.now() + 10000;
      while (!check(...(await summary()))) {
        assert.ok(Date.now() < deadline, `${what}:\n${seen.join('')}`);
        await meanwhile();
      }
    };
    // A loaded machine can answer /stats slower than the 200 ms window lasts: a window missed
    // is filled again by more requests, until one query lands inside a window that holds some.
    await until(
      (interval) => Number(interval) >= DELAY_MS - 5,
      'an interval that covers the requests',
      traffic,
    );
    // no request since: a later flush leaves an empty interval, the cumulative keeps them
    await until(
      (interval, cumulative) => interval === 'nan' && Number(cumulative) >= DELAY_MS - 5,
      'an empty interval after the next flush',
    );
  });
});

test('stats_flush_on_admin: each /stats query flushes every process, with no timer', async () => {
  await withWorkersAndTraffic({ stats_flush_on_admin: true }, async (proxy) => {
    const query = async () => p100((await proxy.get('/stats?filter=cluster\\.web\\.upstream_rq_time$')).body);
    // the query's own flush closes the window that holds the requests
    const [first, total] = await query();
    assert.ok(Number(first) >= DELAY_MS - 5, `interval ${first}`);
    // the next query flushes an empty window; no timer flushed in between either
    const [second, kept] = await query();
    assert.equal(second, 'nan');
    assert.equal(kept, total);
  });
});
