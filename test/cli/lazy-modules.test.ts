import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import http2 from 'node:http2';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import type { JsonObject } from '../../events/index.js';
import { spawnProxy } from '../helpers/cli.js';
import { ADMIN, adsConfig, staticCluster } from '../helpers/xds-fixtures.js';

const dir = mkdtempSync(join(tmpdir(), 'proxy-lazy-'));
after(() => rmSync(dir, { recursive: true, force: true }));

// Preloaded into the proxy: every ES module it loads (a load hook) and every CommonJS
// `require` (of the process's main thread), one URL or request a line, as they happen; and
// at exit, each thread's built-in modules (`builtin:` and its `process.moduleLoadList` entry).
writeFileSync(
  join(dir, 'hooks.mjs'),
  `import { appendFileSync } from 'node:fs';
export async function load(url, context, next) {
  appendFileSync(process.env.LAZY_TEST_MODULES, url + '\\n');
  return next(url, context);
}
`,
);
writeFileSync(
  join(dir, 'register.mjs'),
  `import { appendFileSync } from 'node:fs';
import Module, { register } from 'node:module';
register(new URL('./hooks.mjs', import.meta.url));
const load = Module._load;
Module._load = function (request, ...rest) {
  appendFileSync(process.env.LAZY_TEST_MODULES, request + '\\n');
  return load.call(this, request, ...rest);
};
process.on('exit', () =>
  appendFileSync(process.env.LAZY_TEST_MODULES, process.moduleLoadList.map((m) => 'builtin:' + m + '\\n').join('')),
);
`,
);

/** A port nothing listens on (bound, then closed). */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/**
 * Serves `bootstrap` until its admin is up and its log matches `logged`, stops it, and
 * returns every module it loaded.
 */
async function modulesLoadedServing(name: string, bootstrap: JsonObject, logged = /./): Promise<string[]> {
  const config = join(dir, `${name}.json`);
  const adminPath = join(dir, `${name}.admin`);
  const list = join(dir, `${name}.modules`);
  writeFileSync(config, JSON.stringify(bootstrap));
  const child = spawnProxy(['-c', config, '--admin-address-path', adminPath, '--disable-hot-restart'], {
    NODE_OPTIONS: `--import=${join(dir, 'register.mjs')}`,
    LAZY_TEST_MODULES: list,
  });
  let stderr = '';
  child.stderr?.on('data', (d: Buffer) => {
    stderr += d;
  });
  child.stdout?.resume();
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const deadline = Date.now() + 20_000;
  const up = () => existsSync(adminPath) && readFileSync(adminPath, 'utf8').trim() !== '';
  while (!up() || !logged.test(stderr)) {
    if (child.exitCode !== null) throw new Error(`proxy exited with ${child.exitCode}: ${stderr}`);
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`no admin address or no ${logged} logged within 20 s: ${stderr}`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
  await exited;
  clearTimeout(timer);
  return readFileSync(list, 'utf8').split('\n');
}

const loaded = (modules: string[], part: string) => modules.some((m) => m.includes(part));

test('serving a static bootstrap loads neither gRPC nor the replay and restarter commands', async () => {
  const modules = await modulesLoadedServing('static', {
    admin: ADMIN,
    static_resources: { clusters: [staticCluster('upstream', [await closedPort()])] },
  });
  assert.ok(loaded(modules, 'src/server/main.'), 'the load hook saw the server start');
  assert.ok(!loaded(modules, '@grpc/grpc-js'));
  assert.ok(!loaded(modules, 'src/cli/replay.'));
  assert.ok(!loaded(modules, 'src/cli/restarter.'));
  // Root cause: the admin (and later the xDS REST source) imported `node:http` as an ES
  // module, whose facade reads every export, and `node:http`'s WebSocket and MessageEvent
  // getters load Node's bundled undici (about 3 MB of heap in use). Nothing of the proxy's
  // uses it; src/node-http.ts gives the module without a facade.
  assert.ok(loaded(modules, 'builtin:NativeModule http'), 'the exit hook listed the built-ins');
  // Once in CI (load 40, a 10 s stop) undici was listed: the message names what came before it.
  const undici = modules.findIndex((m) => m.includes('builtin:NativeModule internal/deps/undici/undici'));
  assert.equal(undici, -1, `undici loaded after: ${modules.slice(Math.max(0, undici - 12), undici).join(', ')}`);
});

test('a gRPC management server loads gRPC when it is first dialled', async () => {
  // An HTTP/2 server that answers every call UNIMPLEMENTED: a refused port would fail the
  // dial's SETTINGS check before gRPC is needed, so the server has to speak HTTP/2.
  const server = http2.createServer();
  server.on('stream', (stream) =>
    stream.respond(
      { ':status': 200, 'content-type': 'application/grpc', 'grpc-status': '12' },
      { endStream: true },
    ),
  );
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  after(() => server.close());
  const { port } = server.address() as { port: number };
  const bootstrap = {
    admin: ADMIN,
    static_resources: { clusters: [staticCluster('xds_cluster', [port], true)] },
    dynamic_resources: { cds_config: { ads: {} }, ads_config: adsConfig() },
  };
  // The call is answered UNIMPLEMENTED: the stream logs that it closed and will retry.
  const modules = await modulesLoadedServing(
    'ads',
    bootstrap,
    new RegExp(`xDS stream to 127.0.0.1:${port} closed`),
  );
  assert.ok(loaded(modules, '@grpc/grpc-js'));
});
