/**
 * The safer admin: on a unix socket whose file has the configured mode (so only who may open
 * the file reaches the admin), and `--admin-read-only`, which refuses every mutating endpoint
 * that `/help` lists with 403 and the reason while reads still work.
 */
import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import * as http from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { handlers } from '../../src/admin/handlers/index.js';
import { runCli } from '../helpers/bootstrap.js';
import { LOOPBACK_ADMIN } from '../helpers/bootstraps.js';
import { spawnProxy } from '../helpers/cli.js';
import { startProxyProcess } from '../helpers/proxy-process.js';

const dir = mkdtempSync(join(tmpdir(), 'safer-admin-'));
after(() => rmSync(dir, { recursive: true, force: true }));

function overSocket(
  socketPath: string,
  method: string,
  path: string,
): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request({ socketPath, method, path, timeout: 5000 }, (res) => {
      let body = '';
      res.on('data', (c) => (body += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', reject);
    req.end();
  });
}

/** Starts the proxy with its admin on `pipe`; resolves once `/ready` answers over it. */
async function startOnPipe(name: string, pipe: Record<string, unknown>) {
  const config = join(dir, `${name}.json`);
  const addressFile = join(dir, `${name}.address`);
  writeFileSync(config, JSON.stringify({ admin: { address: { pipe } } }));
  const child: ChildProcess = spawnProxy([
    '-c',
    config,
    '--admin-address-path',
    addressFile,
    '--disable-hot-restart',
  ]);
  let stderr = '';
  child.stderr?.on('data', (d: Buffer) => (stderr += d));
  const deadline = Date.now() + 20000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`proxy exited: ${stderr}`);
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`admin not ready over ${String(pipe.path)}: ${stderr}`);
    }
    if (existsSync(addressFile) && readFileSync(addressFile, 'utf8') === pipe.path) {
      const ready = await overSocket(pipe.path as string, 'GET', '/ready').catch(() => null);
      if (ready?.status === 200) break;
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  return {
    async stop() {
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      await exited;
    },
  };
}

describe('admin on a unix socket (admin.address.pipe)', () => {
  for (const mode of [0o600, 0o660]) {
    it(`serves over the socket, whose file has mode ${mode.toString(8)}`, async () => {
      const path = join(dir, `admin-${mode.toString(8)}.sock`);
      const proxy = await startOnPipe(`pipe-${mode.toString(8)}`, { path, mode });
      try {
        const st = statSync(path);
        assert.ok(st.isSocket());
        assert.equal(st.mode & 0o777, mode);
        const info = await overSocket(path, 'GET', '/server_info');
        assert.equal(info.status, 200);
        assert.equal(JSON.parse(info.body).state, 'LIVE');
      } finally {
        await proxy.stop();
      }
    });
  }

  it('an unset mode means owner only (0600)', async () => {
    const path = join(dir, 'admin-default.sock');
    const proxy = await startOnPipe('pipe-default', { path });
    try {
      assert.equal(statSync(path).mode & 0o777, 0o600);
    } finally {
      await proxy.stop();
    }
  });

  it('refuses a mode that is not permission bits, or a mode on an abstract socket, at validate', async () => {
    const big = await runCli([
      '--mode',
      'validate',
      '--config-yaml',
      'admin: { address: { pipe: { path: /tmp/a.sock, mode: 4095 } } }',
    ]);
    assert.equal(big.status, 1);
    assert.match(big.stderr, /admin\.address\.pipe\.mode: 4095 is more than 0777/);
    const abstract = await runCli([
      '--mode',
      'validate',
      '--config-yaml',
      "admin: { address: { pipe: { path: '@proxy-admin', mode: 384 } } }",
    ]);
    assert.equal(abstract.status, 1);
    assert.match(abstract.stderr, /admin\.address\.pipe\.mode: an abstract socket/);
  });
});

describe('--admin-read-only', () => {
  it('refuses every mutating endpoint /help lists with 403 and the reason; reads still work', async () => {
    const proxy = await startProxyProcess({ admin: LOOPBACK_ADMIN }, ['--admin-read-only']);
    try {
      const help = await proxy.get('/help');
      assert.equal(help.status, 200);
      const listed = new Set([...help.body.matchAll(/^ {2}(\/\S*): /gm)].map((m) => m[1] as string));
      const mutating = handlers.filter((h) => h.mutates && listed.has(h.path)).map((h) => h.path);
      for (const known of [
        '/quitquitquit',
        '/healthcheck/fail',
        '/logging',
        '/runtime_modify',
        '/reset_counters',
        '/drain_listeners',
        '/reopen_logs',
      ])
        assert.ok(mutating.includes(known), `${known} is a mutating endpoint of /help`);
      for (const path of mutating) {
        const res = await proxy.post(path);
        assert.equal(res.status, 403, path);
        assert.match(
          res.body,
          new RegExp(
            `^${path.replace(/[/]/g, '\\/')} changes the server, and this admin is read-only \\(--admin-read-only\\): refused\\n$`,
          ),
        );
      }
      // Nothing happened: still LIVE, health checks not failed, listeners not drained.
      assert.equal((await proxy.get('/ready')).status, 200);
      const info = JSON.parse((await proxy.get('/server_info')).body);
      assert.equal(info.state, 'LIVE');
      assert.equal((await proxy.get('/stats?filter=^server\\.live$')).status, 200);
      assert.equal((await proxy.get('/config_dump')).status, 200);
    } finally {
      await proxy.stop();
    }
  });
});
