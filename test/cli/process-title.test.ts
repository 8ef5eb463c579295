import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { processTitle } from '../../src/cli/process-title.js';
import { repoRoot, spawnProxy } from '../helpers/cli.js';

const dir = mkdtempSync(join(tmpdir(), 'proxy-title-'));
after(() => rmSync(dir, { recursive: true, force: true }));

describe('processTitle', () => {
  it('is proxy, the arguments and the epoch', () => {
    assert.equal(
      processTitle(['-c', 'a.yaml', '--concurrency', '2'], 3),
      'proxy -c a.yaml --concurrency 2 [epoch 3]',
    );
  });

  it('folds a multi-line --config-yaml into one line', () => {
    assert.equal(
      processTitle(['--config-yaml', 'admin:\n  address: {}\n'], 0),
      'proxy --config-yaml admin: address: {} [epoch 0]',
    );
  });
});

describe('the serving process', () => {
  it('shows its config path and epoch in ps and /proc/PID/cmdline', async () => {
    const config = join(dir, 'title-bootstrap.yaml');
    writeFileSync(
      config,
      readFileSync(join(repoRoot, 'fixtures/bootstrap/default.yaml'), 'utf8').replace(
        /port_value: \d+/g,
        'port_value: 0',
      ),
    );
    const adminPath = join(dir, 'admin.txt');
    const child = spawnProxy(['-c', config, '--concurrency', '1', '--admin-address-path', adminPath]);
    let stderr = '';
    child.stderr?.on('data', (d: Buffer) => {
      stderr += d;
    });
    try {
      let ready = false;
      for (let i = 0; i < 150 && !ready; i++) {
        await sleep(100);
        try {
          ready = readFileSync(adminPath, 'utf8').trim() !== '';
        } catch {
          // not written yet
        }
      }
      assert.ok(ready, `the proxy did not start; stderr: ${stderr}`);
      const expected = `proxy -c ${config} --concurrency 1 --admin-address-path ${adminPath} [epoch 0]`;
      const cmdline = readFileSync(`/proc/${child.pid}/cmdline`, 'utf8').replace(/\0+$/, '');
      assert.equal(cmdline, expected);
      const ps = execFileSync('ps', ['-o', 'args=', '-p', String(child.pid)], { encoding: 'utf8' }).trim();
      assert.equal(ps, expected);
    } finally {
      child.kill('SIGTERM');
      await new Promise((resolve) => child.once('close', resolve));
    }
  });
});
