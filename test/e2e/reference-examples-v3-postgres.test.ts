/**
 * The reference's postgres sandbox bootstrap (fixtures/reference-examples-v3/examples/postgres/
 * envoy.yaml) served as pasted but for where things are: its listener and admin on free ports,
 * its STRICT_DNS cluster (docker host `postgres`) pointed at a real Postgres server this test
 * starts. psql talks through it with two workers, as the sandbox's README does, and the
 * postgres_proxy filter's `postgres.egress_postgres.*` counters say what went by.
 */
import assert from 'node:assert/strict';
import { type ChildProcess, execFile, execFileSync, spawn } from 'node:child_process';
import { existsSync, readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { freePort } from '../helpers/free-port.js';
import type { ProxyProcess } from '../helpers/proxy-process.js';
import {
  countersUnder,
  scratchDirOf,
  serveSandbox,
  stopServer,
  untilAnswers,
} from '../helpers/sandbox-database.js';

const SANDBOX = 'fixtures/reference-examples-v3/examples/postgres/envoy.yaml';

/** The server's binaries (Debian keeps them off PATH), or null when Postgres is not installed. */
function postgresBin(): string | null {
  const base = '/usr/lib/postgresql';
  if (!existsSync(base)) return null;
  for (const version of readdirSync(base).sort().reverse()) {
    const bin = join(base, version, 'bin');
    if (existsSync(join(bin, 'postgres')) && existsSync(join(bin, 'psql'))) return bin;
  }
  return null;
}

function psql(bin: string, port: number, sql: string): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(
      join(bin, 'psql'),
      ['-h', '127.0.0.1', '-p', String(port), '-U', 'postgres', '-At', '-v', 'ON_ERROR_STOP=1', '-c', sql],
      { timeout: 20_000, env: { ...process.env, PGSSLMODE: 'prefer', PGCONNECT_TIMEOUT: '10' } },
      (err, stdout, stderr) => (err ? reject(new Error(`${err.message}: ${stderr}`)) : resolve(stdout)),
    );
  });
}

const bin = postgresBin();

describe("the reference's postgres sandbox, served", {
  skip: bin === null && 'Postgres is not installed',
}, () => {
  let dir: string;
  let server: ChildProcess;
  let proxy: ProxyProcess;
  let port: number;

  before(async () => {
    const pgBin = bin as string;
    // util-linux puts runuser in /usr/sbin, which a plain user's PATH (the README's commands
    // under `env -i`) leaves out.
    const runuser = ['/usr/sbin/runuser', '/sbin/runuser'].find((p) => existsSync(p)) ?? 'runuser';
    // The server refuses to run as root: it runs as the package's own user.
    dir = scratchDirOf('postgres', 'postgres-sandbox-');
    const data = join(dir, 'data');
    execFileSync(
      runuser,
      ['-u', 'postgres', '--', join(pgBin, 'initdb'), '-D', data, '-A', 'trust', '-U', 'postgres'],
      { stdio: 'ignore', timeout: 120_000 },
    );
    const pgPort = await freePort();
    server = spawn(
      runuser,
      [
        '-u',
        'postgres',
        '--',
        join(pgBin, 'postgres'),
        '-D',
        data,
        '-p',
        String(pgPort),
        '-k',
        dir,
        '-c',
        'listen_addresses=127.0.0.1',
      ],
      { stdio: 'ignore' },
    );
    await untilAnswers(() => psql(pgBin, pgPort, 'SELECT 1'));
    proxy = await serveSandbox(SANDBOX, pgPort);
    port = await proxy.listenerPort('postgres_listener');
  });

  after(async () => {
    await proxy?.stop();
    // runuser passes the signal on: SIGINT is Postgres's fast shutdown.
    await stopServer(server, 'SIGINT');
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('carries psql sessions to the server and counts them in postgres.egress_postgres.*', async () => {
    assert.equal(
      await psql(
        bin as string,
        port,
        'CREATE TABLE t (a int); BEGIN; INSERT INTO t VALUES (1), (2); COMMIT; SELECT sum(a) FROM t;',
      ),
      'CREATE TABLE\nBEGIN\nINSERT 0 2\nCOMMIT\n3\n',
    );
    await assert.rejects(psql(bin as string, port, 'SELECT * FROM missing'), /does not exist/);

    const { text, value } = await countersUnder(proxy, 'postgres.egress_postgres.');
    // psql asks for SSL first (sslmode prefer), the server says no, and the session goes on in the clear.
    assert.equal(value('sessions'), 2, text);
    assert.equal(value('sessions_unencrypted'), 2);
    assert.equal(value('statements_insert'), 1);
    assert.equal(value('statements_select'), 1);
    assert.equal(value('statements_other'), 1, 'CREATE TABLE');
    assert.equal(value('transactions_commit'), 3, 'CREATE TABLE, BEGIN..COMMIT, SELECT');
    assert.equal(value('errors_error'), 1);
    assert.ok(value('messages_frontend') >= 4 && value('messages_backend') > value('messages_frontend'));
  });
});
