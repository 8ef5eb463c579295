/** Starts the admin interface in-process, over a real socket on 127.0.0.1:0, for admin tests. */
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { bootstrapLoaded, type JsonObject, serverStateChanged } from '../../events/index.js';
import type { HandlerDescriptor } from '../../src/admin/registry.js';
import { startAdmin } from '../../src/admin/server.js';
import type { Options } from '../../src/options.js';
import { DEFAULT_OPTIONS } from '../../src/cli/parse.js';
import { commandLineOptionsJson } from '../../src/cli/server-info-options.js';
import { createContext, type ServerContext } from '../../src/context.js';
import type { HistoryOptions } from '../../src/control/history.js';
import { createLoggers, type Loggers } from '../../src/logging/loggers.js';
import { startAdminInputs } from '../../src/edges/start.js';
import { VERSION } from '../../src/version.js';

/** The repository root, from `test/helpers` (tsx) or `dist/test/helpers` (compiled). */
export const repoRoot = fileURLToPath(
  new URL(import.meta.url.includes('/dist/') ? '../../../' : '../../', import.meta.url),
);

export interface TestAdmin {
  /** `http://127.0.0.1:PORT` */
  base: string;
  ctx: ServerContext;
  /** Exit codes `ctx.shutdown` was asked for (the process never exits in-process). */
  shutdownCodes: number[];
  get(path: string): Promise<Response>;
  /** GETs `path` and parses the JSON body (free-form: tests walk it with assertions). */
  // biome-ignore lint/suspicious/noExplicitAny: admin JSON bodies are free-form under test
  getJson(path: string): Promise<any>;
  post(path: string, body?: string, contentType?: string): Promise<Response>;
  close(): Promise<void>;
}

/** A bootstrap with its admin on 127.0.0.1:0 and the given static resources and extras. */
export function adminBootstrap(extra: JsonObject = {}): JsonObject {
  return {
    admin: { address: { socket_address: { address: '127.0.0.1', port_value: 0 } } },
    ...extra,
  };
}

/**
 * Builds a server context with `createContext`, as `serve()` does, folds the bootstrap in,
 * starts the edges the admin shows (disk runtime, contention sampler) and the admin, and goes
 * LIVE. Shutdown runs the steps without exiting. No history unless `extra.history` asks
 * (the event log still records with `options.eventLog`).
 */
export async function startTestAdmin(
  bootstrap: JsonObject,
  options: Partial<Options> = {},
  extra: { table?: readonly HandlerDescriptor[]; log?: Loggers; history?: HistoryOptions } = {},
): Promise<TestAdmin> {
  const opts: Options = { ...DEFAULT_OPTIONS, ...options };
  const shutdownCodes: number[] = [];
  const log = extra.log ?? createLoggers({ logLevel: 'critical' });
  const ctx = createContext({
    options: opts,
    log,
    bootstrap,
    history: extra.history ?? false,
    exit: (code) => shutdownCodes.push(code),
  });
  ctx.store.dispatch(
    bootstrapLoaded({ bootstrap, options: commandLineOptionsJson(opts), version: VERSION, sources: [] }),
    'bootstrap',
  );
  await startAdminInputs(ctx);
  const address = await startAdmin(ctx, extra.table);
  ctx.store.dispatch(serverStateChanged({ state: 'LIVE' }), 'server');
  const base = `http://${address}`;
  return {
    base,
    ctx,
    shutdownCodes,
    get: (path) => fetch(`${base}${path}`),
    getJson: async (path) => (await fetch(`${base}${path}`)).json(),
    post: (path, body, contentType = 'application/x-www-form-urlencoded') =>
      fetch(`${base}${path}`, {
        method: 'POST',
        body,
        headers: body === undefined ? {} : { 'content-type': contentType },
      }),
    async close() {
      await ctx.close();
      log.close();
    },
  };
}

/** A scratch directory removed by the returned function. */
export function scratchDir(): { dir: string; remove(): void } {
  const dir = mkdtempSync(join(tmpdir(), 'proxy-admin-test-'));
  return { dir, remove: () => rmSync(dir, { recursive: true, force: true }) };
}

/** A proxy process running `serve()` on `bootstrapFile`; resolves once its admin address is written. */
export async function spawnProxy(
  bootstrapFile: string,
  dir: string,
): Promise<{ child: ChildProcess; base: string; exited: Promise<number | null> }> {
  const addressFile = join(dir, 'admin-address');
  const compiled = import.meta.url.includes('/dist/');
  const mainModule = compiled
    ? join(repoRoot, 'dist/src/server/main.js')
    : join(repoRoot, 'src/server/main.ts');
  const parseModule = compiled ? join(repoRoot, 'dist/src/cli/parse.js') : join(repoRoot, 'src/cli/parse.ts');
  const script =
    `const { serve } = await import(${JSON.stringify(mainModule)});` +
    `const { DEFAULT_OPTIONS } = await import(${JSON.stringify(parseModule)});` +
    `await serve({ ...DEFAULT_OPTIONS, configPath: ${JSON.stringify(bootstrapFile)}, adminAddressPath: ${JSON.stringify(addressFile)}, logLevel: 'critical' });`;
  const args = compiled
    ? ['--input-type=module', '-e', script]
    : ['--import', 'tsx', '--input-type=module', '-e', script];
  const child = spawn(process.execPath, args, { cwd: repoRoot, stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr?.on('data', (d) => {
    stderr += d;
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const deadline = Date.now() + 60_000;
  while (!existsSync(addressFile) || readFileSync(addressFile, 'utf8') === '') {
    if (child.exitCode !== null) throw new Error(`proxy exited with ${child.exitCode}: ${stderr}`);
    if (Date.now() > deadline) {
      child.kill();
      throw new Error(`proxy did not write its admin address within 60 s: ${stderr}`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  return { child, base: `http://${readFileSync(addressFile, 'utf8').trim()}`, exited };
}

/** Writes `content` to `dir/name` and returns the path. */
export function writeFixture(dir: string, name: string, content: string): string {
  const path = join(dir, name);
  writeFileSync(path, content);
  return path;
}
