/**
 * Event-log lifecycle (issue 11, findings 4 and 8). Root causes: the log was written on a
 * 10 s timer only, so kill -9 lost every event the admin had acknowledged since; a restart
 * appending to the same file numbered from seq 1 again, so the file no longer replayed;
 * the file was created with the default mode (0644) though it records the configuration.
 * On a full disk (issue 25, item 6): /runtime_modify answered 200 while its event was not
 * written (the writer dropped lines it failed to write), and once space returned the next
 * lines were appended to the torn one, so `proxy replay` failed on the whole file.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import {
  appendFileSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import type { JsonObject } from '../../events/index.js';
import { replayLog } from '../../src/control/replay.js';
import { runProxy } from '../helpers/cli.js';
import { type ProxyProcess, startProxyProcess } from '../helpers/proxy-process.js';
import { mountTinyFs } from '../helpers/tiny-fs.js';

const BOOTSTRAP: JsonObject = {
  admin: { address: { socket_address: { address: '127.0.0.1', port_value: 0 } } },
};

const dir = mkdtempSync(join(tmpdir(), 'event-log-durability-'));
const running = new Set<ProxyProcess>();
after(async () => {
  for (const p of running) p.child.kill('SIGKILL');
  rmSync(dir, { recursive: true, force: true });
});

async function start(log: string, args: string[] = []): Promise<ProxyProcess> {
  const proxy = await startProxyProcess(BOOTSTRAP, ['--event-log', log, ...args]);
  running.add(proxy);
  return proxy;
}

function killed(proxy: ProxyProcess): Promise<void> {
  return new Promise((resolve) => {
    if (proxy.child.exitCode !== null || proxy.child.signalCode !== null) return resolve();
    proxy.child.once('exit', () => resolve());
    proxy.child.kill('SIGKILL');
  });
}

/** Sequence numbers of the envelope lines, in file order. */
function seqs(log: string): number[] {
  return readFileSync(log, 'utf8')
    .split('\n')
    .filter((line) => line.startsWith('{"seq":'))
    .map((line) => (JSON.parse(line) as { seq: number }).seq);
}

const mode = (path: string) => statSync(path).mode & 0o777;

test('kill -9 right after the admin acknowledged mutations loses none of them (default flush interval)', async () => {
  const log = join(dir, 'kill9.ndjson');
  const proxy = await start(log);
  const count = 200;
  for (let i = 0; i < count; i++) {
    const res = await proxy.post(`/runtime_modify?durable_key=${i}`);
    assert.equal(res.status, 200, res.body);
  }
  await killed(proxy);
  const text = readFileSync(log, 'utf8');
  const modified = text.split('\n').filter((l) => l.includes('"durable_key"'));
  assert.equal(modified.length, count, 'every acknowledged runtime change is in the file');
  const replayed = await replayLog(log);
  const layer = replayed.state.runtime.layers.find((l) => Object.hasOwn(l.values, 'durable_key'));
  assert.equal(layer?.values.durable_key, String(count - 1));
});

test('the event log is created 0600, an existing one is narrowed to 0600, and a reopened one is 0600', async () => {
  const log = join(dir, 'mode.ndjson');
  const proxy = await start(log);
  assert.equal(mode(log), 0o600);
  // Rotation: move the file away, SIGUSR1 reopens the path.
  renameSync(log, `${log}.1`);
  proxy.child.kill('SIGUSR1');
  const deadline = Date.now() + 5000;
  for (;;) {
    try {
      statSync(log);
      break;
    } catch {
      assert.ok(Date.now() < deadline, 'the log was not reopened within 5 s');
      await new Promise((r) => setTimeout(r, 50));
    }
  }
  assert.equal(mode(log), 0o600);
  await killed(proxy);

  const old = join(dir, 'world-readable.ndjson');
  writeFileSync(old, '', { mode: 0o644 });
  assert.equal(mode(old), 0o644);
  const second = await start(old);
  assert.equal(mode(old), 0o600);
  await killed(second);
});

test('a restart appending to the same log numbers on, and the whole file replays', async () => {
  const log = join(dir, 'restart.ndjson');
  const first = await start(log);
  assert.equal((await first.post('/runtime_modify?run=one&only_first=yes')).status, 200);
  await killed(first);
  const firstSeqs = seqs(log);
  const lastOfFirst = firstSeqs.at(-1) as number;
  // The crash tore a line in half: the next run cuts it off instead of writing after it.
  appendFileSync(log, '{"seq":999,"at":17');

  const second = await start(log);
  assert.equal((await second.post('/runtime_modify?run=two')).status, 200);
  const events = JSON.parse((await second.get('/events')).body) as { events: Array<{ seq: number }> };
  assert.ok(events.events.length > 0, 'without since, /events lists what this run retains');
  assert.equal(events.events[0]?.seq, lastOfFirst + 1);
  await killed(second);

  const all = seqs(log);
  assert.ok(all.length > firstSeqs.length);
  assert.deepEqual(
    all,
    all.map((_, i) => i + 1),
    'one ascending sequence from 1',
  );
  assert.ok(!readFileSync(log, 'utf8').includes('"seq":999'), 'the torn line is gone');

  const replayed = await replayLog(log);
  assert.deepEqual(replayed.badLines, []);
  assert.equal(replayed.lastSeq, all.at(-1));
  const values = Object.assign({}, ...replayed.state.runtime.layers.map((l) => l.values));
  assert.equal(values.run, 'two');
  assert.equal(
    values.only_first,
    undefined,
    'the second run started from its bootstrap, not from the first run',
  );
  // A point in the first run still replays as the first run saw it.
  const atFirst = await replayLog(log, { target: { seq: lastOfFirst } });
  const before = Object.assign({}, ...atFirst.state.runtime.layers.map((l) => l.values));
  assert.equal(before.run, 'one');
});

test('on a full disk a mutation is acknowledged only once on disk, else answered 500 naming the failure; the log heals', async (t) => {
  const tiny = mountTinyFs('64k');
  if (typeof tiny === 'string') return t.skip(tiny);
  try {
    const log = join(tiny.dir, 'events.ndjson');
    const proxy = await start(log);
    tiny.fill();
    const answers: Array<{ key: string; status: number; body: string }> = [];
    for (let i = 0; i < 20; i++) {
      const res = await proxy.post(`/runtime_modify?full_${i}=${'v'.repeat(200)}${i}`);
      answers.push({ key: `full_${i}`, status: res.status, body: res.body });
    }
    const refused = answers.filter((a) => a.status !== 200);
    assert.ok(refused.length > 0, 'the disk filled up');
    for (const a of refused) {
      assert.equal(a.status, 500, a.body);
      assert.match(a.body, /^\/runtime_modify: applied, but not recorded: .*ENOSPC/);
    }
    // The state says what the answers said: every change is applied, acknowledged or not.
    const runtime = JSON.parse((await proxy.get('/runtime')).body) as { entries: Record<string, unknown> };
    for (const a of answers) assert.ok(a.key in runtime.entries, `${a.key} applied`);
    tiny.free();
    const after = await proxy.post('/runtime_modify?after=freed');
    assert.equal(after.status, 200, after.body);
    await killed(proxy);
    // Nothing was glued to a torn line: the whole file replays, every change in it, in order.
    const replayed = await replayLog(log);
    assert.deepEqual(replayed.badLines, []);
    assert.equal(replayed.truncatedTail, null);
    const values = Object.assign({}, ...replayed.state.runtime.layers.map((l) => l.values));
    for (const a of answers) assert.ok(a.key in values, `${a.key} in the log`);
    assert.equal(values.after, 'freed');
    const all = seqs(log);
    assert.deepEqual(
      all,
      all.map((_, i) => i + 1),
      'one ascending sequence',
    );
  } finally {
    tiny.unmount();
  }
});

test('with the event log removed (its directory too) a mutation is answered 500; /reopen_logs opens a new file that replays', async () => {
  // Root cause: writes to a removed file go to an inode nothing names and are lost when the
  // process ends, but they succeed: every mutation was acknowledged 200 as if on disk.
  const where = join(dir, 'removed');
  mkdirSync(where);
  const log = join(where, 'events.ndjson');
  const proxy = await start(log);
  assert.equal((await proxy.post('/runtime_modify?before=kept')).status, 200);
  rmSync(where, { recursive: true, force: true });
  const lost = await proxy.post('/runtime_modify?during=lost');
  assert.equal(lost.status, 500, lost.body);
  assert.match(lost.body, /^\/runtime_modify: applied, but not recorded: .*was removed; \/reopen_logs/);
  mkdirSync(where);
  const reopened = await proxy.post('/reopen_logs');
  assert.equal(reopened.status, 200, reopened.body);
  const next = await proxy.post('/runtime_modify?after=reopened');
  assert.equal(next.status, 200, next.body);
  await killed(proxy);
  // The new file starts with a header and a checkpoint of the state, the lost change in it.
  const values = Object.assign({}, ...(await replayLog(log)).state.runtime.layers.map((l) => l.values));
  assert.deepEqual([values.before, values.during, values.after], ['kept', 'lost', 'reopened']);
});

test('--event-log naming a FIFO or a directory: the process exits 1 at once naming it', async () => {
  // Root cause: the log was opened blocking, so a FIFO held the process before it started,
  // silent for ever, and a device was narrowed to 0600 (a link to /dev/null changed the
  // machine's /dev/null); test/control/log-file.test.ts holds the cases one by one.
  const fifo = join(dir, 'events.fifo');
  execFileSync('mkfifo', [fifo]);
  const directory = join(dir, 'events.dir');
  mkdirSync(directory);
  const config = join(dir, 'admin-only.json');
  writeFileSync(config, JSON.stringify(BOOTSTRAP));
  for (const [path, kind] of [
    [fifo, 'a FIFO'],
    [directory, 'a directory'],
  ] as const) {
    const run = await runProxy(['-c', config, '--disable-hot-restart', '--event-log', path], {}, 30_000);
    assert.equal(run.code, 1, run.stderr);
    assert.ok(run.stderr.includes(`event log ${path} is ${kind}, not a regular file`), run.stderr);
  }
});

test('SIGUSR1 with the event log directory gone: logged, the process serves on; the open file is kept until a reopen succeeds', async () => {
  // Root cause: the signal's reopen rejected (ENOENT) with no one to catch it, an unhandled
  // rejection that ended the process; and a reopen that failed had closed the old file first,
  // leaving its descriptor number to whatever the process opened next.
  const where = join(dir, 'signalled');
  mkdirSync(where);
  const log = join(where, 'events.ndjson');
  const proxy = await start(log);
  rmSync(where, { recursive: true, force: true });
  proxy.child.kill('SIGUSR1');
  await new Promise((r) => setTimeout(r, 500));
  const failed = await proxy.post('/reopen_logs');
  assert.equal(failed.status, 500, failed.body);
  assert.ok(proxy.stderr().includes('event log cannot be reopened'), proxy.stderr());
  assert.equal((await proxy.get('/ready')).status, 200, 'still serving');
  mkdirSync(where);
  proxy.child.kill('SIGUSR1');
  await new Promise((r) => setTimeout(r, 500));
  assert.equal((await proxy.post('/runtime_modify?after=signal')).status, 200);
  await killed(proxy);
  const values = Object.assign({}, ...(await replayLog(log)).state.runtime.layers.map((l) => l.values));
  assert.equal(values.after, 'signal');
});
