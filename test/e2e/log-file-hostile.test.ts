/**
 * The files the proxy appends its logs to, when they are FIFOs or on a full disk, at
 * --concurrency 2. Root causes: an access log (a listener's or the admin's) or `--log-path`
 * naming a FIFO with no reader was opened with a blocking write-only `open(2)`, which waits for
 * a reader: the process never became LIVE, answered nothing, and SIGTERM could not stop it.
 * And `--log-path`'s flush timer let a write's ENOSPC escape, which ended the process (exit 1
 * and a stack trace) once the disk under its log filled.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { hcmWithRoutes, httpBootstrap } from '../helpers/bootstraps.js';
import { readFifo } from '../helpers/fifo.js';
import { startProxyProcess } from '../helpers/proxy-process.js';
import { mountTinyFs } from '../helpers/tiny-fs.js';

const dir = mkdtempSync(join(tmpdir(), 'log-file-hostile-'));
after(() => rmSync(dir, { recursive: true, force: true }));

const FILE_LOG = 'type.googleapis.com/envoy.extensions.access_loggers.file.v3.FileAccessLog';
const HELLO = { match: { prefix: '/' }, direct_response: { status: 200, body: { inline_string: 'hi' } } };

async function get(port: number, path: string): Promise<string> {
  const res = await fetch(`http://127.0.0.1:${port}${path}`, { signal: AbortSignal.timeout(10_000) });
  return `${res.status} ${await res.text()}`;
}

/** Waits for the child's exit and gives its code. */
async function exitCode(
  stop: () => Promise<void>,
  child: { exitCode: number | null },
): Promise<number | null> {
  await stop();
  return child.exitCode;
}

test('access logs and --log-path naming FIFOs nobody reads: LIVE, serving, lines kept for a reader', async () => {
  const [access, admin, log] = ['access', 'admin', 'log'].map((name) => join(dir, `${name}.fifo`)) as [
    string,
    string,
    string,
  ];
  for (const fifo of [access, admin, log]) execFileSync('mkfifo', [fifo]);
  const hcm = {
    ...hcmWithRoutes([HELLO]),
    access_log: [
      {
        name: 'envoy.access_loggers.file',
        typed_config: { '@type': FILE_LOG, path: access, log_format: { text_format: 'got %REQ(:PATH)%\n' } },
      },
    ],
  };
  const bootstrap = httpBootstrap([], hcm);
  (bootstrap.admin as { access_log_path?: string }).access_log_path = admin;
  const proxy = await startProxyProcess(bootstrap, [
    '--concurrency',
    '2',
    '--log-path',
    log,
    '--file-flush-interval-msec',
    '20',
  ]);
  let code: number | null = null;
  try {
    const port = await proxy.listenerPort('http');
    const answers = await Promise.all(Array.from({ length: 20 }, (_, i) => get(port, `/r${i}`)));
    assert.deepEqual(answers, Array(20).fill('200 hi'));
    const [accessLines, adminLines, logLines] = await Promise.all([
      readFifo(access, 1500),
      readFifo(admin, 1500),
      readFifo(log, 1500),
    ]);
    assert.deepEqual(
      accessLines.trim().split('\n').sort(),
      Array.from({ length: 20 }, (_, i) => `got /r${i}`).sort(),
    );
    assert.match(adminLines, /"GET \/ready HTTP\/1.1" 200/);
    assert.match(logLines, /\[main\] .*configuration loaded/);
  } finally {
    code = await exitCode(() => proxy.stop(), proxy.child);
  }
  assert.equal(code, 0, proxy.stderr());
});

test('--log-path on a disk that fills: serving on, the failure said once, exit 0, lines written once freed', async (t) => {
  const fs = mountTinyFs();
  if (typeof fs === 'string') {
    t.skip(fs);
    return;
  }
  const log = join(fs.dir, 'proxy.log');
  try {
    const proxy = await startProxyProcess(httpBootstrap([], hcmWithRoutes([HELLO])), [
      '--concurrency',
      '2',
      '--log-path',
      log,
      '--log-level',
      'trace',
      '--file-flush-interval-msec',
      '20',
    ]);
    let code: number | null = null;
    try {
      const port = await proxy.listenerPort('http');
      fs.fill();
      for (let i = 0; i < 50; i++) {
        assert.equal(await get(port, `/full${i}`), '200 hi');
        assert.equal((await proxy.post(`/runtime_modify?k=${i}`)).status, 200);
      }
      assert.equal((await proxy.get('/ready')).status, 200);
      assert.equal(proxy.stderr().match(/log file '.*proxy.log': cannot write: ENOSPC/g)?.length, 1);
      fs.free();
      assert.equal((await proxy.post('/runtime_modify?k=freed')).status, 200);
      // Waited for rather than slept on: at load in CI the next flush came after a 500 ms sleep.
      const deadline = Date.now() + 15_000;
      while (!/log file '.*proxy.log': writing again/.test(proxy.stderr()) && Date.now() < deadline) {
        await new Promise((r) => setTimeout(r, 100));
      }
    } finally {
      code = await exitCode(() => proxy.stop(), proxy.child);
    }
    assert.equal(code, 0, proxy.stderr());
    assert.match(proxy.stderr(), /log file '.*proxy.log': writing again/);
    assert.match(readFileSync(log, 'utf8'), /proxy shut down/);
  } finally {
    fs.unmount();
  }
});
