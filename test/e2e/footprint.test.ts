import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { cleanupsAfterAll } from '../helpers/cleanups.js';
import { exchange, tcpEchoBootstrap, tcpServer } from '../helpers/dataplane.js';
import { startProxyProcess } from '../helpers/proxy-process.js';

const cleanups = cleanupsAfterAll();

/** The resident set of the whole process (every thread: the main one and the workers). */
const rssMb = (pid: number) =>
  Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1]) / 1024;

/**
 * A generous bound on what `--concurrency 2` holds once a burst of load is over: 129 MB built
 * (up to 147 on a loaded machine) and 150-151 under tsx (which compiles every module in every
 * thread) after this test's load, where it held 159-173 and 239-330 at once (bench/README.md,
 * "Footprint, 2026-11-28"). Before the threads gave back what a burst left, RSS stayed where the
 * load put it.
 */
const IDLE_BOUND_MB = import.meta.url.includes('/dist/') ? 180 : 200;

test('--concurrency 2 gives back what a burst of load left once it is idle', async () => {
  const upstream = await tcpServer((socket) => {
    socket.on('data', (c: Buffer) => socket.write(c));
    socket.on('end', () => socket.end());
  });
  cleanups.push(upstream.close);
  const proxy = await startProxyProcess(tcpEchoBootstrap(upstream.port), ['--concurrency', '2']);
  cleanups.push(proxy.stop);
  const port = await proxy.listenerPort('tcp');
  const pid = proxy.child.pid as number;
  const payload = Buffer.alloc(16 * 1024, 'x');
  const end = Date.now() + 3000;
  let exchanged = 0;
  await Promise.all(
    Array.from({ length: 16 }, async () => {
      while (Date.now() < end) {
        const { data, error } = await exchange(port, payload);
        assert.equal(error, null);
        assert.equal(data.length, payload.length);
        exchanged += 1;
      }
    }),
  );
  assert.ok(exchanged > 100, `${exchanged} exchanges in 3 s`);
  const loaded = rssMb(pid);
  // Each thread collects after a busy second and an idle one: give it ten.
  const deadline = Date.now() + 10_000;
  let idle = rssMb(pid);
  while ((idle > IDLE_BOUND_MB || idle > loaded * 0.95) && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 250));
    idle = rssMb(pid);
  }
  assert.ok(
    idle <= IDLE_BOUND_MB,
    `${idle.toFixed(1)} MB idle after the load (${loaded.toFixed(1)} MB at once)`,
  );
});
