import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

const compiled = import.meta.url.includes('/dist/');
/** The repository root, or `dist/` when compiled (where the modules below are). */
const root = fileURLToPath(new URL('../../../../../', import.meta.url));
const ext = compiled ? 'js' : 'ts';

// wasmoon is 0.5 MB of heap and a 148 KB source in every thread that imports it: a thread
// whose config has no Lua filter must not pay for it (bench/README.md, "Footprint: the main
// thread serves").
test('wasmoon is loaded by the first Lua state made, not by importing the HTTP filters', () => {
  const code = `
    import { createRequire } from 'node:module';
    const loaded = () => Object.keys(createRequire(import.meta.url).cache).some((k) => k.includes('/wasmoon/'));
    await import(${JSON.stringify(`${root}src/dataplane/http/filters/registry.${ext}`)});
    const { LuaVm } = await import(${JSON.stringify(`${root}src/dataplane/http/filters/lua/vm.${ext}`)});
    const before = loaded();
    const vm = await LuaVm.create({ runMs: 1000, memoryBytes: 2 ** 20 });
    console.log(JSON.stringify({ before, after: loaded(), ran: vm.run('x = 1 + 1', 'test').ok }));
  `;
  const run = spawnSync(
    process.execPath,
    [...(compiled ? [] : ['--import', 'tsx']), '--input-type=module', '-e', code],
    { cwd: root, encoding: 'utf8', timeout: 30_000 },
  );
  assert.equal(run.status, 0, run.stderr);
  assert.deepEqual(JSON.parse(run.stdout.trim()), { before: false, after: true, ran: true });
});
