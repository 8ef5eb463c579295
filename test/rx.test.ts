import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

const compiled = import.meta.url.includes('/dist/');
/** The repository root, or `dist/` when compiled (where the modules below are). */
const root = fileURLToPath(new URL('../', import.meta.url));
const ext = compiled ? 'js' : 'ts';

// RxJS's index requires all 223 of its modules (1.7 MB of heap) in every thread; the program
// takes the few values it uses from their own modules (src/rx.ts).
test("the store, the stats and the data plane load RxJS's values, not its index", () => {
  const code = `
    import { createRequire } from 'node:module';
    const indexLoaded = () => Object.keys(createRequire(import.meta.url).cache).some((k) => k.includes('/rxjs/dist/cjs/index.js'));
    const { Store } = await import(${JSON.stringify(`${root}src/control/store.${ext}`)});
    await import(${JSON.stringify(`${root}src/stats/start.${ext}`)});
    await import(${JSON.stringify(`${root}src/logging/store-binding.${ext}`)});
    await import(${JSON.stringify(`${root}src/dataplane/listeners/manager.${ext}`)});
    const store = new Store();
    let seen = 0;
    store.state$.subscribe(() => seen++);
    const before = indexLoaded();
    const rx = await import(${JSON.stringify(`${root}src/rx.${ext}`)});
    const index = await import('rxjs');
    console.log(JSON.stringify({ before, seen, same: rx.BehaviorSubject === index.BehaviorSubject && rx.Subject === index.Subject }));
  `;
  const run = spawnSync(
    process.execPath,
    [...(compiled ? [] : ['--import', 'tsx']), '--input-type=module', '-e', code],
    { cwd: root, encoding: 'utf8', timeout: 30_000 },
  );
  assert.equal(run.status, 0, run.stderr);
  assert.deepEqual(JSON.parse(run.stdout.trim()), { before: false, seen: 1, same: true });
});
