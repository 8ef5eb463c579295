/**
 * Hot restart without the restarter (issue 27): each epoch is started directly with
 * `--restart-epoch N`, as systemd or the reference's hot-restarter.py start it, with no IPC
 * channel to receive sockets on. It binds its listeners and admin beside epoch N-1's
 * (SO_REUSEPORT), goes LIVE, and tells N-1 over the domain socket to drain and exit. Three
 * restarts under steady HTTP/1 keep-alive and HTTP/2 load plus a fresh connection every few
 * milliseconds: not one request fails and not one connection is refused.
 */
import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { spawnProxy } from '../helpers/cli.js';
import {
  migrateQueuedConnections,
  RESTARTS_TEST_MS,
  restartableBootstrap,
  until,
} from '../helpers/hot-restart.js';
import { steadyLoad } from '../helpers/steady-load.js';

const BODY = 'served';
const RESTARTS = 3;
const dir = mkdtempSync(join(tmpdir(), 'proxy-hot-restart-direct-'));
const cleanups: Array<() => void> = [() => rmSync(dir, { recursive: true, force: true })];
after(() => {
  for (const c of cleanups.reverse()) c();
});

test(`${RESTARTS} hot restarts started directly with --restart-epoch under load: no failed request, no refused connection`, {
  timeout: RESTARTS_TEST_MS,
}, async () => {
  migrateQueuedConnections(cleanups);
  const { bootstrap, port, adminPort } = await restartableBootstrap(BODY, cleanups);
  const config = join(dir, 'bootstrap.json');
  writeFileSync(config, JSON.stringify(bootstrap));
  const args = ['-c', config, '--drain-time-s', '2', '--parent-shutdown-time-s', '10'];
  args.push('--socket-path', join(dir, 'hot-restart'), '--concurrency', '2');
  let stderr = '';
  const epochs: ChildProcess[] = [];
  /** Starts epoch `epoch` the way systemd would: no restarter, no IPC channel. */
  const start = (epoch: number) => {
    const child = spawnProxy([...args, '--restart-epoch', String(epoch)]);
    child.stderr?.on('data', (d: Buffer) => {
      stderr += d;
    });
    child.stdout?.resume();
    cleanups.push(() => child.kill('SIGKILL'));
    epochs.push(child);
    return child;
  };
  const liveEpoch = async (): Promise<number> => {
    const res = await fetch(`http://127.0.0.1:${adminPort}/server_info`).catch(() => null);
    const info = res
      ? ((await res.json()) as { state: string; command_line_options: { restart_epoch: number } })
      : null;
    return info?.state === 'LIVE' ? info.command_line_options.restart_epoch : -1;
  };
  start(0);
  await until(async () => (await liveEpoch()) === 0, `epoch 0 LIVE (${stderr})`);
  const load = steadyLoad(port, {
    h1Clients: 4,
    h2Clients: 2,
    probeEveryMs: 5,
    maxRequests: 200_000,
    body: BODY,
  });
  await until(() => load.ok >= 300, 'load to flow');
  for (let epoch = 1; epoch <= RESTARTS; epoch++) {
    const before = load.ok;
    const parent = epochs[epoch - 1] as ChildProcess;
    start(epoch);
    // The parent exits once the new epoch is LIVE and it drained; then only the new one answers.
    await until(() => parent.exitCode !== null, `epoch ${epoch - 1} to exit (${stderr})`);
    assert.equal(parent.exitCode, 0, stderr);
    assert.equal(await liveEpoch(), epoch);
    await until(() => load.ok >= before + 300, `load to flow through epoch ${epoch}`);
  }
  const result = await load.stop();
  assert.deepEqual(result.failed, [], 'no request failed');
  assert.equal(result.refused, 0, 'no connection was refused');
  assert.ok(result.ok > 1200, `${result.ok} requests answered`);
  // Nothing went over IPC: each epoch bound beside its parent.
  assert.doesNotMatch(stderr, /listening socket handed over/);
  assert.match(stderr, /hot restart: parent epoch exiting/);
  const last = epochs[RESTARTS] as ChildProcess;
  last.kill('SIGTERM');
  await until(() => last.exitCode !== null, 'the last epoch to exit');
});
