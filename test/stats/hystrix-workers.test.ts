/**
 * `/hystrix_event_stream` of a real proxy process: with `--concurrency 2` the data plane runs
 * in the workers and the stream lives in the primary, so each flush record must count the
 * workers' cluster traffic; with `--concurrency 1` the same figures come from the process itself.
 */
import assert from 'node:assert/strict';
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import { test } from 'node:test';
import { hcmWithRoutes, httpBootstrap } from '../helpers/bootstraps.js';
import { cluster } from '../helpers/dataplane.js';
import { startProxyProcess } from '../helpers/proxy-process.js';

/** How long the upstream holds each answer: the latency percentiles must see it. */
const DELAY_MS = 30;

interface Command {
  name: string;
  rollingCountSemaphoreRejected: number;
  rollingCountSuccess: number;
  rollingCountFailure: number;
  requestCount: number;
  latencyExecute: Record<string, number>;
}

/** One request on a connection of its own, so the kernel hands it to either worker. */
function get(port: number, path: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = http.get({ host: '127.0.0.1', port, path, agent: false }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.setTimeout(5000, () => req.destroy(new Error(`GET ${path} timed out`)));
    req.on('error', reject);
  });
}

/** The `HystrixCommand` records the stream sends, as they come, per cluster. */
function hystrixRecords(admin: string): { commands: Map<string, Command[]>; close(): void } {
  const commands = new Map<string, Command[]>();
  let buf = '';
  const req = http.get(`${admin}/hystrix_event_stream`, (res) => {
    res.setEncoding('utf8');
    res.on('data', (chunk: string) => {
      buf += chunk;
      const lines = buf.split('\n');
      buf = lines.pop() ?? '';
      for (const line of lines) {
        if (!line.startsWith('data: ')) continue;
        const record = JSON.parse(line.slice('data: '.length)) as Command & { type: string };
        if (record.type !== 'HystrixCommand') continue;
        const list = commands.get(record.name) ?? [];
        list.push(record);
        commands.set(record.name, list);
      }
    });
  });
  req.on('error', () => {});
  return { commands, close: () => req.destroy() };
}

async function until(check: () => boolean, what: () => string, timeoutMs = 10000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting: ${what()}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

async function streamCountsTraffic(concurrency: number): Promise<void> {
  const web = http.createServer((req, res) => {
    setTimeout(() => {
      res.statusCode = req.url === '/fail' ? 503 : 200;
      res.end('ok');
    }, DELAY_MS);
  });
  await new Promise<void>((r) => web.listen(0, '127.0.0.1', r));
  const webPort = (web.address() as AddressInfo).port;
  // No request may go to `full`: each is a pending overflow, a rejection in the stream.
  const full = cluster('full', [webPort], { circuit_breakers: { thresholds: [{ max_requests: 0 }] } });
  const bootstrap = httpBootstrap(
    [cluster('web', [webPort]), full],
    hcmWithRoutes([
      { match: { prefix: '/full' }, route: { cluster: 'full' } },
      { match: { prefix: '/' }, route: { cluster: 'web' } },
    ]),
  );
  const proxy = await startProxyProcess(
    {
      ...bootstrap,
      stats_flush_interval: '0.200s',
      stats_sinks: [
        {
          name: 'envoy.stat_sinks.hystrix',
          // 50 buckets of 200 ms: every request of the test stays in the rolling window
          typed_config: {
            '@type': 'type.googleapis.com/envoy.config.metrics.v2.HystrixSink',
            num_buckets: 50,
          },
        },
      ],
    },
    ['--concurrency', String(concurrency)],
  );
  const stream = hystrixRecords(proxy.admin);
  try {
    const port = await proxy.listenerPort('http');
    // the first record is the baseline the rolling counts start from
    await until(
      () => (stream.commands.get('web')?.length ?? 0) > 0,
      () => 'a first record',
    );
    const statuses = await Promise.all([
      ...Array.from({ length: 12 }, () => get(port, '/ok')),
      ...Array.from({ length: 3 }, () => get(port, '/fail')),
      ...Array.from({ length: 4 }, () => get(port, '/full')),
    ]);
    assert.deepEqual(
      statuses.filter((s) => s === 200).length + statuses.filter((s) => s === 503).length,
      19,
      String(statuses),
    );
    const last = () => stream.commands.get('web')?.at(-1);
    await until(
      () => last()?.rollingCountSuccess === 12 && last()?.rollingCountFailure === 3,
      () => `counts 12/3 in the stream, last: ${JSON.stringify(last())}\n${proxy.stderr()}`,
    );
    assert.equal(last()?.requestCount, 15);
    const rejected = () => stream.commands.get('full')?.at(-1);
    await until(
      () => rejected()?.rollingCountSemaphoreRejected === 4,
      () => `4 rejections in the stream, last: ${JSON.stringify(rejected())}`,
    );
    // latency covers one flush interval: some record after the traffic saw the upstream's delay
    assert.ok(
      stream.commands.get('web')?.some((c) => (c.latencyExecute['100'] ?? 0) >= DELAY_MS - 5),
      JSON.stringify(stream.commands.get('web')?.map((c) => c.latencyExecute['100'])),
    );
  } finally {
    stream.close();
    await proxy.stop();
    web.closeAllConnections();
    web.close();
  }
}

test('hystrix stream with --concurrency 2: each flush record counts the workers traffic', async () => {
  await streamCountsTraffic(2);
});

test('hystrix stream with --concurrency 1: the same counts from the process itself', async () => {
  await streamCountsTraffic(1);
});
