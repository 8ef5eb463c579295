/**
 * `envoy.filters.network.local_ratelimit` in the real process, over real sockets to a real TCP
 * upstream: a chain admits max_tokens connections and closes the next ones unanswered, counted
 * in `local_ratelimit.<stat_prefix>.rate_limited`; `runtime_enabled` switches it off at
 * `/runtime_modify`; with `--concurrency 2` the threads take from one bucket, as the reference's
 * workers do (each held a share of it, admitting fewer than max_tokens when connections landed
 * unevenly), and a worker restarted after a crash takes from it too. Its compile step refuses
 * what the reference refuses, by path.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { JsonObject } from '../../../../events/index.js';
import { Report } from '../../../../src/bootstrap/report.js';
import { localRateLimitFactory } from '../../../../src/dataplane/network-filters/local-ratelimit/index.js';
import { bootstrapOf, errorsOf, loadYaml } from '../../../helpers/bootstrap.js';
import { repoRoot } from '../../../helpers/cli.js';
import { cluster, exchange, tcpServer } from '../../../helpers/dataplane.js';
import { type ProxyProcess, startProxyProcess } from '../../../helpers/proxy-process.js';

const V3 = 'type.googleapis.com/envoy.extensions.filters.network.local_ratelimit.v3.LocalRateLimit';

/** A listener whose chain is the rate limit filter (`config`) before a TCP proxy to `echo`. */
function listener(name: string, config: JsonObject): JsonObject {
  return {
    name,
    address: { socket_address: { address: '127.0.0.1', port_value: 0 } },
    filter_chains: [
      {
        filters: [
          { name: 'envoy.filters.network.local_ratelimit', typed_config: { '@type': V3, ...config } },
          {
            name: 'envoy.tcp_proxy',
            typed_config: {
              '@type': 'type.googleapis.com/envoy.config.filter.network.tcp_proxy.v2.TcpProxy',
              stat_prefix: 'echo',
              cluster: 'echo',
            },
          },
        ],
      },
    ],
  };
}

/** A bucket no test outlives: its tokens come back after an hour. */
const HOURLY = (maxTokens: number) => ({ max_tokens: maxTokens, tokens_per_fill: 1, fill_interval: '3600s' });

async function startWith(
  upstreamPort: number,
  listeners: JsonObject[],
  concurrency: number,
  env: Record<string, string> = {},
): Promise<ProxyProcess> {
  return startProxyProcess(
    {
      admin: { address: { socket_address: { address: '127.0.0.1', port_value: 0 } } },
      static_resources: { clusters: [cluster('echo', [upstreamPort])], listeners },
    },
    ['--concurrency', String(concurrency)],
    60_000,
    env,
  );
}

async function stat(proxy: ProxyProcess, name: string): Promise<number> {
  const body = (await proxy.get('/stats')).body;
  return Number(new RegExp(`^${name.replaceAll('.', '\\.')}: (\\d+)$`, 'm').exec(body)?.[1] ?? -1);
}

/** Opens `n` connections one after another: how many were relayed (the echo came back). */
async function admitted(port: number, n: number): Promise<number> {
  let relayed = 0;
  for (let i = 0; i < n; i++) if ((await exchange(port, 'hi')).data.toString() === 'echo:hi') relayed++;
  return relayed;
}

describe('envoy.filters.network.local_ratelimit', () => {
  let upstream: Awaited<ReturnType<typeof tcpServer>>;
  let proxy: ProxyProcess;

  before(async () => {
    upstream = await tcpServer((socket) => {
      const chunks: Buffer[] = [];
      socket.on('data', (c: Buffer) => chunks.push(c));
      socket.on('end', () => socket.end(Buffer.concat([Buffer.from('echo:'), ...chunks])));
    });
    proxy = await startWith(
      upstream.port,
      [
        listener('limited', { stat_prefix: 'two', token_bucket: HOURLY(2) }),
        listener('switchable', {
          stat_prefix: 'switch',
          token_bucket: HOURLY(1),
          runtime_enabled: { default_value: true, runtime_key: 'test.local_ratelimit.enabled' },
        }),
      ],
      1,
    );
  });

  after(async () => {
    await proxy?.stop();
    await upstream?.close();
  });

  it('relays max_tokens connections and closes the next ones without a byte', async () => {
    const port = await proxy.listenerPort('limited');
    assert.equal(await admitted(port, 5), 2);
    assert.equal(await stat(proxy, 'local_ratelimit.two.rate_limited'), 3);
    assert.equal(await stat(proxy, 'tcp.echo.downstream_cx_total'), 2, 'the TCP proxy never saw the others');
  });

  it('lets every connection through while runtime_enabled is off', async () => {
    const port = await proxy.listenerPort('switchable');
    assert.equal(await admitted(port, 2), 1);
    assert.equal((await proxy.post('/runtime_modify?test.local_ratelimit.enabled=false')).status, 200);
    assert.equal(await admitted(port, 3), 3);
    assert.equal((await proxy.post('/runtime_modify?test.local_ratelimit.enabled=true')).status, 200);
    assert.equal(await admitted(port, 1), 0);
    assert.equal(await stat(proxy, 'local_ratelimit.switch.rate_limited'), 2);
  });

  it('with --concurrency 2, the threads admit exactly max_tokens between them, a restarted worker too', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'proxy-local-ratelimit-'));
    const crashFile = join(dir, 'crash');
    const two = await startWith(
      upstream.port,
      [listener('limited', { stat_prefix: 'three', token_bucket: HOURLY(3) })],
      2,
      // Worker 1 throws once the test writes crashFile (test/helpers/crash-worker-thread.mjs).
      {
        NODE_OPTIONS: `--import=${join(repoRoot, 'test/helpers/crash-worker-thread.mjs')}`,
        CRASH_WORKER_FILE: crashFile,
      },
    );
    try {
      const port = await two.listenerPort('limited');
      // Twelve connections, each from its own port: the kernel spreads them over both threads'
      // sockets (all on one thread has odds of 1 in 2,048).
      const relayed: boolean[] = [];
      for (let i = 0; i < 12; i++) relayed.push((await exchange(port, 'hi')).data.toString() === 'echo:hi');
      assert.deepEqual(relayed, [true, true, true, ...Array(9).fill(false)], 'the first three, then none');
      assert.equal(await stat(two, 'local_ratelimit.three.rate_limited'), 9, 'the threads counted together');
      assert.equal(await stat(two, 'tcp.echo.downstream_cx_total'), 3);
      writeFileSync(crashFile, '');
      const deadline = Date.now() + 30_000;
      // Restarted and bound again: the primary's socket and the new worker's.
      const bound = () =>
        execFileSync('ss', ['-Hltn', `sport = :${port}`], { encoding: 'utf8' })
          .trim()
          .split('\n').length;
      while (!/worker 1 exited unexpectedly/.test(two.stderr()) || bound() < 2) {
        assert.ok(Date.now() < deadline, 'worker 1 restarted and bound');
        await new Promise((r) => setTimeout(r, 50));
      }
      // A restarted worker with a bucket of its own would admit up to three more.
      assert.equal(await admitted(port, 12), 0, 'the restarted worker takes from the same, empty, bucket');
    } finally {
      await two.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('refuses a missing stat_prefix or token bucket, a zero max_tokens and a fill under 50 ms, by path', () => {
    const compile = (config: JsonObject) => {
      const report = new Report('t');
      localRateLimitFactory.compile(config, 'f', report);
      return report.errors.join('\n');
    };
    assert.match(compile({ token_bucket: HOURLY(1) }), /f\.stat_prefix: required field missing/);
    assert.match(compile({ stat_prefix: 's' }), /f\.token_bucket: required field missing/);
    assert.match(
      compile({ stat_prefix: 's', token_bucket: { ...HOURLY(1), max_tokens: 0 } }),
      /f\.token_bucket\.max_tokens: must be greater than 0/,
    );
    assert.match(
      compile({ stat_prefix: 's', token_bucket: { max_tokens: 1 } }),
      /f\.token_bucket\.fill_interval: required field missing/,
    );
    assert.match(
      compile({ stat_prefix: 's', token_bucket: { max_tokens: 1, fill_interval: '0.049s' } }),
      /f\.token_bucket\.fill_interval: must be at least 50ms/,
    );
    assert.match(
      compile({ stat_prefix: 's', token_bucket: HOURLY(1), runtime_enabled: { runtime_key: 'k' } }),
      /f\.runtime_enabled\.default_value: required field missing/,
    );
    assert.equal(compile({ stat_prefix: 's', token_bucket: HOURLY(1) }), '');
  });

  it('loads the v3 config as pasted from the reference docs, and refuses a v3 field this build lacks by path', () => {
    const bootstrap = (config: JsonObject) =>
      JSON.stringify({
        static_resources: {
          listeners: [listener('l', config)],
          clusters: [cluster('echo', [1])],
        },
      });
    bootstrapOf(
      loadYaml(bootstrap({ stat_prefix: 'rl', token_bucket: { max_tokens: 10, fill_interval: '1s' } })),
    );
    const errors = errorsOf(
      loadYaml(bootstrap({ stat_prefix: 'rl', token_bucket: HOURLY(1), share_key: 'k' })),
    ).join('\n');
    assert.match(
      errors,
      /static_resources\.listeners\[0\]\.filter_chains\[0\]\.filters\[0\]\.typed_config\.share_key: unknown field/,
    );
  });
});
