import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { repoRoot, runProxy, spawnProxy } from './helpers/cli.js';

const dir = mkdtempSync(join(tmpdir(), 'proxy-cli-'));
after(() => rmSync(dir, { recursive: true, force: true }));

/** The default bootstrap with both ports set to 0, so tests never collide. */
function portZeroBootstrap(): string {
  return readFileSync(join(repoRoot, 'fixtures/bootstrap/default.yaml'), 'utf8').replace(
    /port_value: \d+/g,
    'port_value: 0',
  );
}

describe('proxy command', () => {
  it('--version prints five slash-separated fields and exits 0', async () => {
    const run = await runProxy(['--version']);
    assert.equal(run.code, 0, run.stderr);
    assert.match(
      run.stdout,
      /^proxy version: [0-9a-f]{40}\/\d+\.\d+\.\d+(-dev)?\/(Clean|Modified)\/(RELEASE|DEBUG)\/OpenSSL(-FIPS)?\n$/,
    );
  });

  it('--help lists every option with defaults and exits 0', async () => {
    const run = await runProxy(['--help']);
    assert.equal(run.code, 0);
    for (const option of ['--config-path', '--log-format', '--stats-tag', '--max-stats', '--event-log']) {
      assert.ok(run.stdout.includes(option), `--help lacks ${option}`);
    }
    assert.match(run.stdout, /--drain-time-s <seconds>\n.*\(default: 600\)/);
    // the subcommands main() dispatches on, so a user finds them without the docs
    assert.match(run.stdout, /Subcommands:\n {2}proxy replay LOG\|BUNDLE/);
    assert.match(run.stdout, /\n {2}proxy restarter -- ARGS\n/);
  });

  it('--hot-restart-version prints the compatibility version and exits 0', async () => {
    const run = await runProxy(['--hot-restart-version']);
    assert.equal(run.code, 0, run.stderr);
    assert.equal(run.stdout, '11.104\n');
  });

  it('bad values exit 1 with every error on stderr naming the option', async () => {
    const run = await runProxy(['--local-address-ip-version', 'v5', '--concurrency', 'many']);
    assert.equal(run.code, 1);
    assert.match(run.stderr, /error: unknown IP address version 'v5'/);
    assert.match(run.stderr, /error: invalid value 'many' for --concurrency/);
    assert.equal(run.stdout, '');
  });

  it('--mode validate with the default bootstrap prints OK and exits 0', async () => {
    const run = await runProxy(['--mode', 'validate', '-c', 'fixtures/bootstrap/default.yaml']);
    assert.equal(run.code, 0, run.stderr);
    assert.equal(run.stdout, "configuration 'fixtures/bootstrap/default.yaml' OK\n");
  });

  it('--mode validate with a broken bootstrap prints the errors and exits 1', async () => {
    const run = await runProxy(['--mode', 'validate', '-c', join(dir, 'missing.yaml')]);
    assert.equal(run.code, 1);
    assert.match(run.stderr, /^error: .*missing\.yaml/m);
  });

  it('serves with the options echoed in /server_info, writes --base-id-path, reopens --log-path on SIGUSR1', async () => {
    const adminPath = join(dir, 'admin.txt');
    const baseIdPath = join(dir, 'base-id');
    const child = spawnProxy([
      '--config-yaml',
      portZeroBootstrap(),
      '--admin-address-path',
      adminPath,
      '--base-id',
      '42',
      '--base-id-path',
      baseIdPath,
      '--drain-strategy',
      'immediate',
      '--service-cluster',
      'edge',
      '--log-path',
      join(dir, 'serve.log'),
    ]);
    let stderr = '';
    child.stderr?.on('data', (d: Buffer) => {
      stderr += d;
    });
    try {
      let address = '';
      for (let i = 0; i < 100 && !address; i++) {
        await sleep(100);
        try {
          address = readFileSync(adminPath, 'utf8').trim();
        } catch {
          // not written yet
        }
      }
      assert.ok(address, `no admin address written; stderr: ${stderr}`);
      assert.equal(readFileSync(baseIdPath, 'utf8'), '42');
      const info = (await (await fetch(`http://${address}/server_info`)).json()) as {
        command_line_options: Record<string, unknown>;
      };
      assert.equal(info.command_line_options.base_id, '42');
      assert.equal(info.command_line_options.drain_strategy, 'Immediate');
      assert.equal(info.command_line_options.service_cluster, 'edge');
      assert.equal(info.command_line_options.mode, 'Serve');
      const logPath = join(dir, 'serve.log');
      assert.ok(existsSync(logPath), 'the log file was not opened');
      renameSync(logPath, `${logPath}.1`);
      child.kill('SIGUSR1');
      for (let i = 0; i < 50 && !existsSync(logPath); i++) await sleep(100);
      assert.ok(existsSync(logPath), 'SIGUSR1 did not reopen the log file');
      assert.equal(child.exitCode, null, 'SIGUSR1 stopped the proxy');
    } finally {
      child.kill('SIGTERM');
      await new Promise((resolve) => child.once('close', resolve));
    }
  });
});
