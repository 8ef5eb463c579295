/**
 * The reference's mysql sandbox bootstrap, as of 2020 (v2 type URLs) and today (v3), served as
 * pasted but for where things are: its listener and admin on free ports, its STRICT_DNS cluster
 * (docker host `mysql`) pointed at a real MariaDB server this test starts. The mariadb client
 * talks through it with two workers, as the sandbox's README does, and the mysql_proxy filter's
 * `mysql.egress_mysql.*` counters say what went by: sessions, logins and a failed one.
 */
import assert from 'node:assert/strict';
import { type ChildProcess, execFile, execFileSync, spawn } from 'node:child_process';
import { existsSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { freePort } from '../helpers/free-port.js';
import {
  countersUnder,
  scratchDirOf,
  serveSandbox,
  stopServer,
  untilAnswers,
} from '../helpers/sandbox-database.js';

const SANDBOXES = [
  'fixtures/reference-examples-2020/examples/mysql/envoy.yaml',
  'fixtures/reference-examples-v3/examples/mysql/envoy.yaml',
];
const MARIADBD = '/usr/sbin/mariadbd';
const installed = existsSync(MARIADBD) && existsSync('/usr/bin/mariadb');

function mariadb(port: number, sql: string, password?: string): Promise<string> {
  const args = ['--no-defaults', '-h', '127.0.0.1', '-P', String(port), '-u', 'root', '-N', '-B'];
  if (password !== undefined) args.push(`-p${password}`);
  return new Promise((resolve, reject) => {
    execFile('/usr/bin/mariadb', [...args, '-e', sql], { timeout: 20_000 }, (err, stdout, stderr) =>
      err ? reject(new Error(`${err.message}: ${stderr}`)) : resolve(stdout),
    );
  });
}

describe("the reference's mysql sandbox, served", { skip: !installed && 'MariaDB is not installed' }, () => {
  let dir: string;
  let server: ChildProcess;
  let dbPort: number;

  before(async () => {
    dir = scratchDirOf('mysql', 'mysql-sandbox-');
    const data = join(dir, 'data');
    execFileSync(
      'mariadb-install-db',
      [
        '--no-defaults',
        `--datadir=${data}`,
        '--user=mysql',
        '--auth-root-authentication-method=normal',
        '--skip-test-db',
      ],
      { stdio: 'ignore', timeout: 120_000 },
    );
    dbPort = await freePort();
    server = spawn(
      MARIADBD,
      [
        '--no-defaults',
        `--datadir=${data}`,
        '--user=mysql',
        `--port=${dbPort}`,
        '--bind-address=127.0.0.1',
        `--socket=${join(dir, 'sock')}`,
        '--skip-log-bin',
      ],
      { stdio: 'ignore' },
    );
    await untilAnswers(() => mariadb(dbPort, 'SELECT 1'));
  });

  after(async () => {
    await stopServer(server, 'SIGTERM');
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  for (const file of SANDBOXES) {
    it(`${file}: carries the client's sessions and counts them in mysql.egress_mysql.*`, async () => {
      const proxy = await serveSandbox(file, dbPort);
      try {
        const port = await proxy.listenerPort('mysql_listener');
        assert.equal(
          await mariadb(
            port,
            'CREATE DATABASE IF NOT EXISTS d; CREATE TABLE IF NOT EXISTS d.t (a int); INSERT INTO d.t VALUES (1), (2); SELECT count(*) > 1 FROM d.t;',
          ),
          '1\n',
        );
        assert.equal(await mariadb(port, 'SELECT 6 * 7'), '42\n');
        await assert.rejects(mariadb(port, 'SELECT 1', 'wrong'), /Access denied/);

        const { text, value } = await countersUnder(proxy, 'mysql.egress_mysql.');
        assert.equal(value('sessions'), 3, text);
        assert.equal(value('login_attempts'), 3);
        assert.equal(value('login_failures'), 1);
        assert.equal(value('protocol_errors'), 0);
        assert.equal(value('decoder_errors'), 0);
        assert.equal(value('upgraded_to_ssl'), 0);
      } finally {
        await proxy.stop();
      }
    });
  }
});
