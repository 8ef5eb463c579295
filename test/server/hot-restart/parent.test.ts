/**
 * Root cause: the running epoch's domain socket took any connection for the next epoch. Any
 * local process can reach it (the default name is in the abstract namespace, which has no file
 * modes), and what it sent was trusted: the line `null` is JSON, so its `type` was read off
 * `null` and the TypeError killed the running proxy; a connection that said nothing claimed the
 * takeover on connect, so every real new epoch was refused ("another epoch is already taking
 * over") for as long as it stayed open; and bytes without a newline were buffered without end.
 * Now a line must be a JSON object with a string `type` and at most 64 Ki characters, else
 * the connection closes; only a welcomed hello claims the takeover; and a connection that has
 * not said hello within 10 s is closed.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import * as net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { type ProxyProcess, startProxyProcess } from '../../helpers/proxy-process.js';
import { until } from '../../helpers/hot-restart.js';

const dir = mkdtempSync(join(tmpdir(), 'proxy-hot-restart-hostile-'));
const socketPath = join(dir, 'hr');
const started: ProxyProcess[] = [];
after(async () => {
  for (const p of started) await p.stop();
  rmSync(dir, { recursive: true, force: true });
});

const bootstrap = {
  admin: { address: { socket_address: { address: '127.0.0.1', port_value: 0 } } },
};
const args = (epoch: number) => [
  '--socket-path',
  socketPath,
  '--restart-epoch',
  String(epoch),
  '--drain-time-s',
  '1',
  '--parent-shutdown-time-s',
  '10',
];

/** Connects to epoch 0's domain socket, sends `bytes`, and says whether the proxy closed it. */
function send(bytes: string | Buffer, waitMs = 5000): Promise<{ closed: boolean; answer: string }> {
  return new Promise((resolve) => {
    const socket = net.connect(`${socketPath}_parent_0`);
    let answer = '';
    socket.on('data', (d: Buffer) => {
      answer += d;
    });
    socket.on('error', () => {});
    const timer = setTimeout(() => {
      socket.destroy();
      resolve({ closed: false, answer });
    }, waitMs);
    socket.on('close', () => {
      clearTimeout(timer);
      resolve({ closed: true, answer });
    });
    socket.on('connect', () => socket.write(bytes));
  });
}

test('lines on the hot-restart socket that are no message close that connection; the epoch serves on and still hands over', {
  timeout: 240_000,
}, async () => {
  const epoch0 = await startProxyProcess(bootstrap, args(0));
  started.push(epoch0);
  await until(async () => (await send('', 200)).closed === false, 'the domain socket to listen');
  for (const line of ['null', '5', '"hello"', '[]', '{}', '{"type":7}', '{"type":null}']) {
    const { closed, answer } = await send(`${line}\n`);
    assert.ok(closed, `${line}: the connection is closed`);
    assert.equal(answer, '', `${line}: nothing answered`);
    assert.equal((await epoch0.get('/ready')).status, 200, `${line}: epoch 0 still serves`);
  }
  // 1 MiB with no newline: closed once past the longest line, not kept.
  assert.ok((await send(Buffer.alloc(1 << 20, 'a'))).closed, 'an endless line is closed');
  assert.equal((await epoch0.get('/ready')).status, 200);
  // Messages before a hello, and a hello of a wrong epoch, claim nothing.
  assert.deepEqual(await send('{"type":"drain"}\n{"type":"release-log"}\n', 500), { closed: false, answer: '' });
  const wrong = await send('{"type":"hello","version":"x","baseId":0,"epoch":1,"ipc":false}\n');
  assert.ok(wrong.closed && /"refused".*version mismatch/.test(wrong.answer), wrong.answer);

  // A squatter that connects and says nothing, held open while the real next epoch starts.
  const squatter = net.connect(`${socketPath}_parent_0`);
  squatter.on('error', () => {});
  const squatterClosed = new Promise<void>((resolve) => squatter.once('close', () => resolve()));
  await new Promise<void>((resolve) => squatter.once('connect', () => resolve()));
  const epoch1 = await startProxyProcess(bootstrap, args(1));
  started.push(epoch1);
  await until(() => epoch0.child.exitCode !== null, `epoch 0 to drain and exit (${epoch0.stderr()})`, 60_000);
  assert.equal(epoch0.child.exitCode, 0, epoch0.stderr());
  const info = JSON.parse((await epoch1.get('/server_info')).body) as { state: string };
  assert.equal(info.state, 'LIVE');
  await squatterClosed;
});

test('a connection that never says hello is closed after 10 s', { timeout: 60_000 }, async () => {
  const epoch = started.at(-1);
  assert.ok(epoch && epoch.child.exitCode === null);
  // Epoch 1's own socket, for the epoch after it.
  const silent = net.connect(`${socketPath}_parent_1`);
  silent.on('error', () => {});
  const at = Date.now();
  await new Promise<void>((resolve) => silent.once('close', () => resolve()));
  const held = Date.now() - at;
  assert.ok(held >= 9_000 && held < 30_000, `closed after ${held} ms`);
});
