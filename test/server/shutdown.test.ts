/**
 * Root cause: the SIGTERM and SIGINT handlers were installed only once the server was LIVE, and
 * none ever for SIGHUP. A stop during start-up (a management server that accepts the stream
 * and never answers, with `initial_fetch_timeout: 0s`, holds it there for good) got the
 * signal's default action: killed (exit 143) without its shutdown steps, so the event log's
 * buffered lines and the stop itself never reached the file. SIGHUP, which the reference eats
 * with a warning, ended the proxy on the spot at any time (Node's default). Now the handlers
 * are hooked as soon as the context exists: before LIVE a stop is immediate and clean (exit 0),
 * and SIGHUP is logged and ignored.
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

test('SIGHUP is eaten; SIGTERM while start-up waits on a silent management server exits 0 with the stop in the event log', {
  timeout: 120_000,
}, async () => {
  await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
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
  const config = join(dir, 'bootstrap.json');
  const adminPath = join(dir, 'admin');
  const eventLog = join(dir, 'events.ndjson');
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
  const ready = async () => {
    if (!existsSync(adminPath)) return '';
    const res = await fetch(`http://${readFileSync(adminPath, 'utf8').trim()}/ready`).catch(() => null);
    return res ? await res.text() : '';
  };
  await until('the admin to say INITIALIZING', async () => (await ready()).trim() === 'INITIALIZING', 60_000);
  child.kill('SIGHUP');
  await until('the SIGHUP warning', async () => stderr.includes('caught and eating SIGHUP'), 10_000);
  assert.equal((await ready()).trim(), 'INITIALIZING', 'still there after SIGHUP');
  child.kill('SIGTERM');
  const code = await Promise.race([exited, new Promise((r) => setTimeout(() => r('still running'), 20_000))]);
  assert.equal(code, 0, stderr);
  assert.match(stderr, /signal before LIVE: stopping now/);
  const log = readFileSync(eventLog, 'utf8');
  assert.match(log, /"type":"server\/shutdown-requested","reason":"SIGTERM"/);
  assert.doesNotMatch(log, /"state":"LIVE"/, 'never LIVE once stopping');
});
