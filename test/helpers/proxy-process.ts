/** The real `proxy` command in a child process, with its bootstrap in a temporary file. */
import type { ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { JsonObject } from '../../events/index.js';
import { spawnProxy } from './cli.js';

export interface ProxyProcess {
  child: ChildProcess;
  /** `http://127.0.0.1:PORT` of the admin interface. */
  admin: string;
  stderr(): string;
  get(path: string): Promise<{ status: number; body: string }>;
  post(path: string): Promise<{ status: number; body: string }>;
  /** The real port of a listener, from `/listeners?format=json`. */
  listenerPort(name: string): Promise<number>;
  stop(): Promise<void>;
}

/**
 * Starts `proxy -c <bootstrap.json> ...args` (with `env` added; through `prefix`, e.g.
 * `['prlimit', '--nofile=256', '--']`) and waits until `/ready` says LIVE, or with `until:
 * 'admin'` only until the admin answers it (a server still initializing answers 503).
 */
export async function startProxyProcess(
  bootstrap: JsonObject,
  args: string[] = [],
  // Generous: a loaded 2-core CI machine has taken over 20 s to start the proxy.
  timeoutMs = 60000,
  env: NodeJS.ProcessEnv = {},
  prefix: string[] = [],
  until: 'live' | 'admin' = 'live',
): Promise<ProxyProcess> {
  const dir = mkdtempSync(join(tmpdir(), 'proxy-dp-'));
  const config = join(dir, 'bootstrap.json');
  const adminPath = join(dir, 'admin');
  writeFileSync(config, JSON.stringify(bootstrap));
  const child = spawnProxy(['-c', config, '--admin-address-path', adminPath, ...args], env, false, prefix);
  let err = '';
  child.stderr?.on('data', (d: Buffer) => {
    err += d;
  });
  child.stdout?.resume();
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const deadline = Date.now() + timeoutMs;
  const send = async (method: string, path: string) => {
    const res = await fetch(`${admin}${path}`, { method });
    return { status: res.status, body: await res.text() };
  };
  // A GET on a kept-alive connection the admin closes at that moment fails ("other side
  // closed"), as it would for any HTTP client; like them, retry an idempotent request once.
  const request = (method: string, path: string) =>
    send(method, path).catch((err: unknown) => {
      if (method !== 'GET') throw err;
      return send(method, path);
    });
  let admin = '';
  for (;;) {
    if (child.exitCode !== null) throw new Error(`proxy exited with ${child.exitCode}: ${err}`);
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`proxy not LIVE within ${timeoutMs} ms: ${err}`);
    }
    if (!admin && existsSync(adminPath)) {
      const address = readFileSync(adminPath, 'utf8').trim();
      if (address) admin = `http://${address}`;
    }
    const ready = admin ? (await request('GET', '/ready').catch(() => ({ status: 0, body: '' }))).status : 0;
    if (ready === 200 || (until === 'admin' && ready !== 0)) break;
    await new Promise((r) => setTimeout(r, 50));
  }
  return {
    child,
    admin,
    stderr: () => err,
    get: (path) => request('GET', path),
    post: (path) => request('POST', path),
    async listenerPort(name) {
      const json = JSON.parse((await request('GET', '/listeners?format=json')).body) as {
        listener_statuses: Array<{ name: string; local_address: { socket_address: { port_value: number } } }>;
      };
      const status = json.listener_statuses.find((s) => s.name === name);
      if (!status) throw new Error(`no listener ${name} in /listeners`);
      return status.local_address.socket_address.port_value;
    },
    async stop() {
      if (child.exitCode === null) {
        child.kill('SIGTERM');
        const timer = setTimeout(() => child.kill('SIGKILL'), 5000);
        await exited;
        clearTimeout(timer);
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/**
 * What `/events?follow&since=0` of the admin at `admin` streams until `enough` holds of the
 * text so far, or `timeoutMs` passed (then the text so far, for the caller's assertion).
 */
export async function followEvents(
  admin: string,
  enough: (text: string) => boolean,
  timeoutMs = 10_000,
): Promise<string> {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(), timeoutMs);
  let streamed = '';
  const decoder = new TextDecoder();
  try {
    const res = await fetch(`${admin}/events?follow&since=0`, { signal: controller.signal });
    for await (const chunk of res.body as AsyncIterable<Uint8Array>) {
      streamed += decoder.decode(chunk, { stream: true });
      if (enough(streamed)) break;
    }
  } catch (err) {
    if (!controller.signal.aborted) throw err;
  } finally {
    clearTimeout(timer);
    controller.abort();
  }
  return streamed;
}
