/**
 * The admin's view of the workers' figures when a worker is slow to answer. Root cause of the
 * regression this guards: `/clusters` summed the per-host figures of the threads that
 * answered within the admin's 1 s deadline and left a silent worker out, so a loaded worker's
 * connections and requests dropped out of the totals for that response (`/stats` already
 * counted such a worker with the figures it last sent).
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { cleanupsAfterAll } from '../../helpers/cleanups.js';
import { repoRoot } from '../../helpers/cli.js';
import { exchange, settle, tcpEchoBootstrap, tcpServer } from '../../helpers/dataplane.js';
import { startProxyProcess } from '../../helpers/proxy-process.js';

const cleanups = cleanupsAfterAll();

const CONNECTIONS = 40;

test('--concurrency 2: a worker that misses the admin deadline still counts in /clusters with its last figures', async () => {
  const upstream = await tcpServer((socket) => socket.pipe(socket));
  cleanups.push(upstream.close);
  const dir = mkdtempSync(join(tmpdir(), 'proxy-worker-stall-'));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  const stallFile = join(dir, 'stall');
  const proxy = await startProxyProcess(tcpEchoBootstrap(upstream.port), ['--concurrency', '2'], 60_000, {
    NODE_OPTIONS: `--import=${join(repoRoot, 'test/helpers/stall-worker-thread.mjs')}`,
    STALL_WORKER_FILE: stallFile,
    STALL_WORKER_MS: '4000',
  });
  cleanups.push(proxy.stop);
  const port = await proxy.listenerPort('tcp');
  // One connection each: the kernel spreads them over both threads' sockets.
  for (let i = 0; i < CONNECTIONS; i++)
    assert.equal((await exchange(port, `m${i}`)).data.toString(), `m${i}`);

  const cxTotal = async () => {
    const line = (await proxy.get('/clusters')).body
      .split('\n')
      .find((l) => /^echo::[^:]+:\d+::cx_total::/.test(l));
    return Number(line?.split('::').pop());
  };
  assert.equal(await settle(cxTotal, CONNECTIONS, 30_000), CONNECTIONS, 'both threads counted');

  writeFileSync(stallFile, '');
  // The worker polls for the file every 50 ms, then holds its loop for 4 s: past the admin's 1 s.
  await new Promise((r) => setTimeout(r, 500));
  const started = Date.now();
  const during = await cxTotal();
  assert.ok(Date.now() - started < 3500, 'the admin answered without waiting for the stalled worker');
  assert.equal(during, CONNECTIONS, 'the stalled worker counts with the figures it last sent');
});
