import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

const compiled = import.meta.url.includes('/dist/');
/** The repository root, or `dist/` when compiled (where the modules below are). */
const root = fileURLToPath(new URL('../../', import.meta.url));
const ext = compiled ? 'js' : 'ts';

/** Runs `code` as a module in a fresh node (under tsx when not compiled) and parses its one line. */
function run(code: string): unknown {
  const child = spawnSync(
    process.execPath,
    [...(compiled ? [] : ['--import', 'tsx']), '--input-type=module', '-e', code],
    { cwd: root, encoding: 'utf8', timeout: 30_000 },
  );
  assert.equal(child.status, 0, child.stderr);
  return JSON.parse(child.stdout.trim());
}

// protobufjs is 0.7 MB of heap a thread: a data-plane worker imports every compile step
// (the listener manager's graph) but reflects no schema unless its config needs one.
test('protobufjs is loaded by the first schema reflected, not by importing the data plane', () => {
  const out = run(`
    import { createRequire } from 'node:module';
    const loaded = () => Object.keys(createRequire(import.meta.url).cache).some((k) => k.includes('/protobufjs/'));
    await import(${JSON.stringify(`${root}src/dataplane/listeners/manager.${ext}`)});
    const before = loaded();
    const { serviceMessageType } = await import(${JSON.stringify(`${root}src/bootstrap/proto-root.${ext}`)});
    const type = serviceMessageType('envoy.service.auth.v2.CheckRequest');
    console.log(JSON.stringify({ before, after: loaded(), name: type.name }));
  `);
  assert.deepEqual(out, { before: false, after: true, name: 'CheckRequest' });
});

test('the protobufjs loaded on first use is the one the importing modules get', () => {
  const out = run(`
    const imported = (await import('protobufjs')).default;
    const { protobufjs } = await import(${JSON.stringify(`${root}src/bootstrap/proto-root.${ext}`)});
    const { typeForUrl } = await import(${JSON.stringify(`${root}src/bootstrap/schema.${ext}`)});
    const type = typeForUrl('type.googleapis.com/envoy.config.filter.http.lua.v2.Lua');
    console.log(JSON.stringify({ same: protobufjs() === imported, reflected: type instanceof imported.Type }));
  `);
  assert.deepEqual(out, { same: true, reflected: true });
});
