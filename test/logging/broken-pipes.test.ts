/**
 * The real proxy (two threads) when whoever reads its stdout and stderr goes away.
 * Root cause: Node emits a write's EPIPE as an 'error' on process.stdout or process.stderr,
 * and nobody listened, so the first access log line written after the reader left (a stdout
 * or stderr access log, `proxy ... | head -1`) ended the process with every connection on it,
 * at --concurrency 1 and 2. Worker threads write through the primary, whose copy of their
 * output (Node's own pipe) stopped at that error and never read again: the worker held every
 * later line. The reference ignores SIGPIPE and serves on.
 */
import assert from 'node:assert/strict';
import * as http from 'node:http';
import { after, before, test } from 'node:test';
import { hcmWithRoutes, httpBootstrap } from '../helpers/bootstraps.js';
import { type ProxyProcess, startProxyProcess } from '../helpers/proxy-process.js';

const STREAM_LOG = 'type.googleapis.com/envoy.extensions.access_loggers.stream.v3';

let proxy: ProxyProcess;
let port = 0;

before(async () => {
  const hcm = {
    ...hcmWithRoutes([
      { match: { prefix: '/' }, direct_response: { status: 200, body: { inline_string: 'hi' } } },
    ]),
    access_log: ['Stdout', 'Stderr'].map((which) => ({
      name: `envoy.access_loggers.${which.toLowerCase()}`,
      typed_config: {
        '@type': `${STREAM_LOG}.${which}AccessLog`,
        log_format: { text_format: `${which} %REQ(:PATH)%\n` },
      },
    })),
  };
  proxy = await startProxyProcess(httpBootstrap([], hcm), [
    '--concurrency',
    '2',
    '--file-flush-interval-msec',
    '20',
  ]);
  port = await proxy.listenerPort('http');
});

after(() => proxy.stop());

/** `n` requests, each on its own connection (so both threads take some); the bodies answered. */
async function requests(n: number, tag: string): Promise<string[]> {
  const one = (i: number) =>
    new Promise<string>((resolve) => {
      const req = http.get({ port, host: '127.0.0.1', path: `/${tag}${i}`, agent: false }, (res) => {
        let body = '';
        res.on('data', (c) => (body += c));
        res.on('end', () => resolve(body));
      });
      req.on('error', (err) => resolve(`error: ${err.message}`));
    });
  const out: string[] = [];
  for (let i = 0; i < n; i += 10)
    out.push(...(await Promise.all(Array.from({ length: Math.min(10, n - i) }, (_, k) => one(i + k)))));
  return out;
}

test('every thread’s access log lines reach stdout while it is read', async () => {
  let stdout = '';
  proxy.child.stdout?.on('data', (d: Buffer) => (stdout += d));
  assert.deepEqual(new Set(await requests(60, 'read')), new Set(['hi']));
  const deadline = Date.now() + 10_000;
  while ((stdout.match(/^Stdout \/read\d+$/gm) ?? []).length < 60 && Date.now() < deadline)
    await new Promise((r) => setTimeout(r, 50));
  assert.equal((stdout.match(/^Stdout \/read\d+$/gm) ?? []).length, 60);
});

test('with stdout and stderr closed by their reader, the proxy keeps answering every request', async () => {
  proxy.child.stdout?.destroy();
  proxy.child.stderr?.destroy();
  assert.deepEqual(new Set(await requests(200, 'gone')), new Set(['hi']));
  // Past a flush of the lines written after the break: still serving, admin included.
  await new Promise((r) => setTimeout(r, 200));
  assert.deepEqual(new Set(await requests(20, 'after')), new Set(['hi']));
  assert.equal(proxy.child.exitCode, null);
  assert.equal((await proxy.get('/ready')).status, 200);
});
