import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

const compiled = import.meta.url.includes('/dist/');
/** The repository root, or `dist/` when compiled (where the modules below are). */
const root = fileURLToPath(new URL('../', import.meta.url));
const ext = compiled ? 'js' : 'ts';

// re2-wasm instantiates a 16 MiB WASM heap when loaded: a worker whose routes and stats use
// no regex must not pay for it.
test('re2-wasm is loaded by the first regex compiled, not by importing the data plane or stats', () => {
  const code = `
    import { createRequire } from 'node:module';
    const loaded = () => Object.keys(createRequire(import.meta.url).cache).some((k) => k.includes('re2-wasm'));
    const { TagProducer } = await import(${JSON.stringify(`${root}src/stats/tags.${ext}`)});
    await import(${JSON.stringify(`${root}src/dataplane/router/matchers.${ext}`)});
    const { compileFilter } = await import(${JSON.stringify(`${root}src/stats/filter.${ext}`)});
    new TagProducer().extract('cluster.a.upstream_rq_200');
    const before = loaded();
    compileFilter('^cluster\\\\.(a|b)\\\\.');
    console.log(JSON.stringify({ before, after: loaded() }));
  `;
  const run = spawnSync(
    process.execPath,
    [...(compiled ? [] : ['--import', 'tsx']), '--input-type=module', '-e', code],
    { cwd: root, encoding: 'utf8', timeout: 20_000 },
  );
  assert.equal(run.status, 0, run.stderr);
  assert.deepEqual(JSON.parse(run.stdout.trim()), { before: false, after: true });
});
