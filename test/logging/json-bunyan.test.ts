/**
 * `--log-json`: a serving proxy with two workers at `-l debug` logs bunyan records that the
 * `bunyan` CLI pretty-prints; lifecycle lines come once (not once per worker), each worker
 * says it started and exited under its own id, and each request has a debug line.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { root } from '../helpers/bootstrap.js';
import { hcmWithRoutes, httpBootstrap } from '../helpers/bootstraps.js';
import { startProxyProcess } from '../helpers/proxy-process.js';

interface BunyanRecord {
  v: number;
  level: number;
  name: string;
  hostname: string;
  pid: number;
  time: string;
  msg: string;
  [field: string]: unknown;
}

let stderr = '';
let records: BunyanRecord[] = [];

before(async () => {
  const bootstrap = httpBootstrap(
    [],
    hcmWithRoutes([{ match: { prefix: '/' }, direct_response: { status: 204 } }]),
  );
  const proxy = await startProxyProcess(bootstrap, ['--log-json', '-l', 'debug', '--concurrency', '3']);
  try {
    const port = await proxy.listenerPort('http');
    assert.equal((await fetch(`http://127.0.0.1:${port}/ping`)).status, 204);
  } finally {
    await proxy.stop();
  }
  stderr = proxy.stderr();
  records = stderr
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line) as BunyanRecord);
});

after(() => {});

const withMsg = (msg: string) => records.filter((r) => r.msg === msg);

test('every line is a bunyan record: numeric level, name, hostname, pid, ISO time, msg, v', () => {
  assert.ok(records.length > 5, stderr);
  for (const r of records) {
    assert.equal(r.v, 0);
    assert.equal(typeof r.level, 'number');
    assert.equal(r.name, 'proxy');
    assert.equal(typeof r.hostname, 'string');
    assert.equal(typeof r.pid, 'number');
    assert.ok(!Number.isNaN(Date.parse(r.time)), r.time);
    assert.equal(typeof r.msg, 'string');
  }
});

test('lifecycle at info, once: start, configuration, listener bound, LIVE, shutdown', () => {
  for (const msg of ['starting', 'configuration loaded', 'server LIVE', 'proxy shut down'])
    assert.equal(withMsg(msg).length, 1, `${msg}: ${stderr}`);
  // Each worker says it bound the listener at debug; info has it once.
  const bound = withMsg('listener bound').filter((r) => r.level === 30);
  assert.equal(bound.length, 1, 'one line for the listener, not one per worker');
  assert.equal(bound[0]?.level, 30);
  assert.equal(bound[0]?.listener, 'http', 'structured fields are fields, not text in msg');
  assert.equal(bound[0]?.worker, 0, 'logged by the primary');
});

test('each worker logs its start and exit under its own id', () => {
  const started = withMsg('data-plane worker started');
  assert.deepEqual(started.map((r) => r.worker).sort(), [1, 2]);
  // Threads of the one process: the same pid, told apart by the worker field.
  for (const r of started) assert.equal(r.pid, withMsg('starting')[0]?.pid);
  assert.deepEqual(
    withMsg('data-plane worker exited')
      .map((r) => r.worker)
      .sort(),
    [1, 2],
  );
});

test('each request has a debug line with its fields', () => {
  const done = withMsg('request done');
  assert.equal(done.length, 1, stderr);
  assert.equal(done[0]?.level, 20);
  assert.equal(done[0]?.path, '/ping');
  assert.equal(done[0]?.status, 204);
  // Any of the three data-plane threads: the main one (0) or a worker.
  assert.ok([0, 1, 2].includes(done[0]?.worker as number));
});

test('the bunyan CLI pretty-prints the log', () => {
  const bunyan = join(root, 'node_modules', '.bin', 'bunyan');
  const long = spawnSync(bunyan, ['--no-color'], { input: stderr, encoding: 'utf8', timeout: 10000 });
  assert.equal(long.status, 0, long.stderr);
  assert.match(
    long.stdout,
    /^\[[\d-]+T[\d:.]+Z\] {2}INFO: proxy\/main\/\d+ on .+: listener bound \(.*listener=http/m,
  );
  assert.match(long.stdout, /DEBUG: proxy\/http\/\d+ on .+: request done \(.*path=\/ping/m);
  const short = spawnSync(bunyan, ['--no-color', '-o', 'short', '-l', 'info'], {
    input: stderr,
    encoding: 'utf8',
    timeout: 10000,
  });
  assert.equal(short.status, 0, short.stderr);
  assert.match(short.stdout, /^[\d:.]+Z {2}INFO proxy\/main: server LIVE/m);
  assert.doesNotMatch(short.stdout, /request done/, '-l info leaves the debug lines out');
});
