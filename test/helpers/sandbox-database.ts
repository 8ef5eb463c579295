/**
 * What the reference's database sandbox tests (mysql, postgres) share: a real server run as its
 * package's own user from a scratch directory, waited for and stopped, and the sandbox's
 * bootstrap served as pasted but for where things are (its listener and admin on free ports,
 * its cluster, a docker host, pointed at that server) with two workers, as its README runs it.
 */
import { type ChildProcess, execFileSync } from 'node:child_process';
import { chmodSync, chownSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse } from 'yaml';
import { type Dump, root } from './bootstrap.js';
import { type ProxyProcess, startProxyProcess } from './proxy-process.js';

/** A scratch directory owned by `user` (the servers refuse to run as root, or drop to it). */
export function scratchDirOf(user: string, prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  chmodSync(dir, 0o755);
  const id = (flag: string) => Number(execFileSync('id', [flag, user], { encoding: 'utf8' }).trim());
  chownSync(dir, id('-u'), id('-g'));
  return dir;
}

/** Tries `probe` every 250 ms until it resolves; a server's first start (a fresh data directory) takes seconds. */
export async function untilAnswers(probe: () => Promise<unknown>, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      await probe();
      return;
    } catch (err) {
      if (Date.now() > deadline) throw err;
      await new Promise((r) => setTimeout(r, 250));
    }
  }
}

/** Asks `server` to shut down with `signal`, and kills it if it has not within 15 s. */
export async function stopServer(server: ChildProcess | undefined, signal: NodeJS.Signals): Promise<void> {
  if (!server || server.exitCode !== null) return;
  const exited = new Promise((resolve) => server.once('exit', resolve));
  server.kill(signal);
  await Promise.race([exited, new Promise((r) => setTimeout(r, 15_000))]);
  if (server.exitCode === null) server.kill('SIGKILL');
}

/** The sandbox bootstrap `file` (under the repository) served against the database on `dbPort`. */
export function serveSandbox(file: string, dbPort: number): Promise<ProxyProcess> {
  const bootstrap = parse(readFileSync(join(root, file), 'utf8')) as Dump;
  bootstrap.static_resources.listeners[0].address.socket_address = { address: '127.0.0.1', port_value: 0 };
  bootstrap.static_resources.clusters[0].load_assignment.endpoints[0].lb_endpoints[0].endpoint.address.socket_address =
    { address: '127.0.0.1', port_value: dbPort };
  bootstrap.admin = { address: { socket_address: { address: '127.0.0.1', port_value: 0 } } };
  return startProxyProcess(bootstrap, ['--concurrency', '2']);
}

/** The counters under `prefix` (`mysql.egress_mysql.`), read from /stats: their text, and each by name (NaN if absent). */
export async function countersUnder(
  proxy: ProxyProcess,
  prefix: string,
): Promise<{ text: string; value(name: string): number }> {
  const escaped = prefix.replaceAll('.', '\\.');
  const { body } = await proxy.get(`/stats?filter=^${escaped}`);
  return {
    text: body,
    value(name) {
      const m = new RegExp(`^${escaped}${name}: (\\d+)$`, 'm').exec(body);
      return m ? Number(m[1]) : Number.NaN;
    },
  };
}
