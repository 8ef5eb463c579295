/**
 * Root cause: the SIGTERM and SIGINT handlers were installed only once the server was LIVE, and
 * none ever for SIGHUP. A stop during start-up (a management server that accepts the stream
 * and never answers, with `initial_fetch_timeout: 0s`, holds it there for good) got the
 * signal's default action: killed (exit 143) without its shutdown steps, so the event log's
 * buffered lines and the stop itself never reached the file. SIGHUP, which the reference eats
 * with a warning, ended the proxy on the spot at any time (Node's default). Now the handlers
 * are hooked as soon as the context exists: before LIVE a stop is immediate and clean (exit 0),
 * and SIGHUP is logged and ignored. And a stop before LIVE (these signals, `/quitquitquit`)
 * let the start go on: its shutdown steps ended the discovery waits, so the server went LIVE
 * in the middle of its own exit; a start that was asked to stop now never goes LIVE.
 */
import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import * as http2 from 'node:http2';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import type { JsonObject } from '../../events/index.js';
import { spawnProxy } from '../helpers/cli.js';
import { ADMIN, staticCluster, until } from '../helpers/xds-fixtures.js';

const dir = mkdtempSync(join(tmpdir(), 'shutdown-'));
const children: ChildProcess[] = [];
/** A gRPC server that accepts every stream, answers its headers and never a message. */
const silent = http2.createServer();
silent.on('stream', (stream) => stream.respond({ ':status': 200, 'content-type': 'application/grpc' }));
after(() => {
  for (const c of children) c.kill('SIGKILL');
  silent.close();
  rmSync(dir, { recursive: true, force: true });
});

/** A proxy whose start-up waits for ever on the silent management server, and how to read it. */
async function startHeld(name: string) {
  if (!silent.listening) await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
  const xdsPort = (silent.address() as AddressInfo).port;
  const bootstrap: JsonObject = {
    node: { id: 'n', cluster: 'c' },
    admin: ADMIN,
    dynamic_resources: {
      cds_config: {
        initial_fetch_timeout: '0s',
        api_config_source: {
          api_type: 'GRPC',
          grpc_services: [{ envoy_grpc: { cluster_name: 'xds_cluster' } }],
        },
      },
    },
    static_resources: { clusters: [staticCluster('xds_cluster', [xdsPort], true)] },
  };
  const config = join(dir, `${name}.json`);
  const adminPath = join(dir, `${name}.admin`);
  const eventLog = join(dir, `${name}.ndjson`);
  writeFileSync(config, JSON.stringify(bootstrap));
  const child = spawnProxy([
    '-c',
    config,
    '--admin-address-path',
    adminPath,
    '--event-log',
    eventLog,
    '--disable-hot-restart',
  ]);
  children.push(child);
  let stderr = '';
  child.stderr?.on('data', (d: Buffer) => {
    stderr += d;
  });
  child.stdout?.resume();
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const admin = () => (existsSync(adminPath) ? `http://${readFileSync(adminPath, 'utf8').trim()}` : '');
  const ready = async () => {
    if (!admin()) return '';
    const res = await fetch(`${admin()}/ready`).catch(() => null);
    return res ? (await res.text()).trim() : '';
  };
  await until('the admin to say INITIALIZING', async () => (await ready()) === 'INITIALIZING', 60_000);
  return {
    child,
    admin,
    ready,
    stderr: () => stderr,
    eventLog: () => readFileSync(eventLog, 'utf8'),
    exit: () => Promise.race([exited, new Promise((r) => setTimeout(() => r('still running'), 20_000))]),
  };
}

test('SIGHUP is eaten; SIGTERM while start-up waits on a silent management server exits 0 with the stop in the event log', {
  timeout: 120_000,
}, async () => {
  const held = await startHeld('signal');
  held.child.kill('SIGHUP');
  await until('the SIGHUP warning', async () => held.stderr().includes('caught and eating SIGHUP'), 10_000);
  assert.equal(await held.ready(), 'INITIALIZING', 'still there after SIGHUP');
  held.child.kill('SIGTERM');
  assert.equal(await held.exit(), 0, held.stderr());
  assert.match(held.stderr(), /signal before LIVE: stopping now/);
  const log = held.eventLog();
  assert.match(log, /"type":"server\/shutdown-requested","reason":"SIGTERM"/);
  assert.doesNotMatch(log, /"state":"LIVE"/, 'never LIVE once stopping');
});

test('POST /quitquitquit before LIVE: exits 0 and never goes LIVE', { timeout: 120_000 }, async () => {
  const held = await startHeld('quit');
  const res = await fetch(`${held.admin()}/quitquitquit`, { method: 'POST' });
  assert.equal(res.status, 200);
  assert.equal(await held.exit(), 0, held.stderr());
  assert.doesNotMatch(held.eventLog(), /"state":"LIVE"/, 'never LIVE once stopping');
});
