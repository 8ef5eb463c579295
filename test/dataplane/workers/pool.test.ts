/**
 * Workers as threads of one process: every data-plane thread (the main one and the workers)
 * binds the listener's address (SO_REUSEPORT), a port-0 listener at the port the first one
 * got, and a worker thread that dies of an uncaught error is started again at the same address.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { workerExecArgv } from '../../../src/dataplane/workers/pool.js';
import { cleanupsAfterAll } from '../../helpers/cleanups.js';
import { repoRoot } from '../../helpers/cli.js';
import { exchange, tcpEchoBootstrap, tcpServer } from '../../helpers/dataplane.js';
import { type ProxyProcess, startProxyProcess } from '../../helpers/proxy-process.js';

const cleanups = cleanupsAfterAll();

/** Listening TCP sockets on 127.0.0.1:`port` (one per data-plane thread that bound it). */
function listeningSockets(port: number): number {
  const out = execFileSync('ss', ['-Hltn', `sport = :${port}`], { encoding: 'utf8' });
  return out.split('\n').filter((line) => line.includes(`127.0.0.1:${port}`)).length;
}

async function until(check: () => boolean | Promise<boolean>, what: string, timeoutMs = 30_000) {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

async function echoes(port: number, count: number): Promise<string[]> {
  const answers = await Promise.all(Array.from({ length: count }, (_, i) => exchange(port, `m${i}`)));
  return answers.map((a) => a.data.toString());
}

/**
 * A proxy at `--concurrency concurrency` (the main thread and concurrency - 1 worker threads)
 * serving a port-0 TCP echo listener `tcp`; worker N crashes when the test writes
 * `<crashFile>.N` (worker 1 also on `crashFile`), see crash-worker-thread.mjs.
 */
async function crashableEchoProxy(concurrency: number): Promise<{ proxy: ProxyProcess; crashFile: string }> {
  const upstream = await tcpServer((socket) => socket.pipe(socket));
  cleanups.push(upstream.close);
  const dir = mkdtempSync(join(tmpdir(), 'proxy-worker-crash-'));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  const crashFile = join(dir, 'crash');
  const proxy = await startProxyProcess(
    tcpEchoBootstrap(upstream.port),
    ['--concurrency', String(concurrency)],
    60_000,
    {
      NODE_OPTIONS: `--import=${join(repoRoot, 'test/helpers/crash-worker-thread.mjs')}`,
      CRASH_WORKER_FILE: crashFile,
    },
  );
  cleanups.push(proxy.stop);
  return { proxy, crashFile };
}

test('workerExecArgv keeps loaders and profilers, drops V8 flags and what names the script', () => {
  assert.deepEqual(
    workerExecArgv([
      '--import',
      'tsx',
      '--max-semi-space-size=1',
      '--input-type=module',
      '-e',
      'code',
      '--require=agent.js',
      '--cpu-prof',
      '--',
      '',
    ]),
    ['--import', 'tsx', '--require=agent.js', '--cpu-prof'],
  );
});

test('--concurrency 2: the main thread and the worker thread bind a port-0 listener at one port; a crashed worker is restarted there', async () => {
  const { proxy, crashFile } = await crashableEchoProxy(2);
  const port = await proxy.listenerPort('tcp');
  assert.notEqual(port, 0);
  assert.equal(listeningSockets(port), 2, 'each data-plane thread listens on the port');
  assert.deepEqual(
    await echoes(port, 12),
    Array.from({ length: 12 }, (_, i) => `m${i}`),
  );

  writeFileSync(crashFile, '');
  await until(
    () => /data-plane worker 1 exited unexpectedly; restarting it/.test(proxy.stderr()),
    'the crash',
  );
  const restarts = async () =>
    (await proxy.get('/stats?filter=^listener_manager\\.worker_restarts$')).body.trim();
  assert.equal(await restarts(), 'listener_manager.worker_restarts: 1');
  await until(() => listeningSockets(port) === 2, 'the restarted worker thread to bind the same port');
  assert.equal(await proxy.listenerPort('tcp'), port, 'the listener keeps its port');
  assert.deepEqual(
    await echoes(port, 12),
    Array.from({ length: 12 }, (_, i) => `m${i}`),
  );
  assert.equal((await proxy.get('/ready')).status, 200, 'the process serves on');
});

test('--concurrency 3, every worker thread crashed at once: the restarted ones serve a port-0 listener at its port', async () => {
  // Issue 25 item 7: the restarted workers must bind the port the snapshot (and /listeners)
  // reports, not pick another (the main thread holds it meanwhile).
  const { proxy, crashFile } = await crashableEchoProxy(3);
  const port = await proxy.listenerPort('tcp');
  assert.equal(listeningSockets(port), 3);
  for (let round = 1; round <= 2; round++) {
    writeFileSync(`${crashFile}.1`, '');
    writeFileSync(`${crashFile}.2`, '');
    await until(
      async () =>
        (await proxy.get('/stats?filter=^listener_manager\\.worker_restarts$')).body.trim() ===
        `listener_manager.worker_restarts: ${2 * round}`,
      `both worker threads crashed (round ${round})`,
    );
    await until(() => listeningSockets(port) === 3, `both restarted worker threads to bind port ${port}`);
    assert.equal(await proxy.listenerPort('tcp'), port, '/listeners reports the port that serves');
    assert.deepEqual(
      await echoes(port, 12),
      Array.from({ length: 12 }, (_, i) => `m${i}`),
    );
  }
});
