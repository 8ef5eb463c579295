/**
 * Root cause: Node opens its inspector (a debugger any local process can attach to and run code
 * in) on a SIGUSR1 no JavaScript listener takes, and the proxy's SIGUSR1 listeners (reopening
 * the logs) were hooked only once the server's context existed. A `kill -USR1` from log
 * rotation while a proxy loaded its bootstrap, or at any time in `--mode validate` or `proxy
 * replay`, left 127.0.0.1:9229 listening for the life of the process. `src/cli/signal-guard.ts`
 * takes the signal from the first import of the command on.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { repoRoot } from '../helpers/cli.js';

const compiled = import.meta.url.includes('/dist/');

/** A process that imports `modules`, signals itself SIGUSR1, and prints the inspector's URL. */
function signalled(modules: string[]): { stdout: string; stderr: string } {
  const script = [
    ...modules.map((m) => `await import(${JSON.stringify(m)});`),
    "process.kill(process.pid, 'SIGUSR1');",
    'await new Promise((r) => setTimeout(r, 500));',
    "const { url } = await import('node:inspector');",
    'console.log(String(url()));',
    'process.exit(0);',
  ].join('\n');
  const run = spawnSync(
    process.execPath,
    [...(compiled ? [] : ['--import', 'tsx']), '--input-type=module', '-e', script],
    { cwd: repoRoot, encoding: 'utf8', timeout: 30_000 },
  );
  return { stdout: run.stdout, stderr: run.stderr };
}

test('with the guard imported, SIGUSR1 opens no inspector; without it, it does', () => {
  const guard = join(repoRoot, compiled ? 'dist/src/cli/signal-guard.js' : 'src/cli/signal-guard.ts');
  const guarded = signalled([guard]);
  assert.equal(guarded.stdout.trim(), 'undefined', guarded.stderr);
  assert.doesNotMatch(guarded.stderr, /Debugger listening/);
  // (Where another process holds port 9229 the inspector fails to start, and says so.)
  const bare = signalled([]);
  assert.match(
    `${bare.stdout}${bare.stderr}`,
    /Debugger listening|Starting inspector/,
    'the test sees an inspector open',
  );
});

test('the command imports the guard before anything else', () => {
  const firstImport = (file: string) => /^import .*$/m.exec(readFileSync(join(repoRoot, file), 'utf8'))?.[0];
  assert.equal(firstImport('bin/proxy.js'), "import '../dist/src/cli/signal-guard.js';");
  assert.equal(firstImport('src/main.ts'), "import './cli/signal-guard.js';");
});
