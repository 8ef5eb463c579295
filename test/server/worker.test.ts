/**
 * A worker thread is an isolate of its own that loads every module it imports again: it
 * must load the data plane only, not what the primary alone runs (the admin, the event log
 * and its history, xDS streams, the worker pool), nor their packages.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { dirname, relative, resolve } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

const compiled = import.meta.url.includes('/dist/');
/** The repository root, or `dist/` when compiled. */
const root = fileURLToPath(new URL('../../', import.meta.url));
const ext = compiled ? '.js' : '.ts';

/** Static imports and re-exports that load something (`import type` loads nothing). */
const IMPORT =
  /^\s*(import|export)\s+(type\s)?[^'"]*?from\s+['"]([^'"]+)['"]|^\s*import\s+['"]([^'"]+)['"]/gm;

/** Every module file and package `entry` loads statically, as paths from the root. */
function staticGraph(entry: string): { files: Set<string>; packages: Set<string> } {
  const files = new Set<string>();
  const packages = new Set<string>();
  const todo = [resolve(root, entry)];
  for (let file = todo.pop(); file !== undefined; file = todo.pop()) {
    const key = relative(root, file);
    if (files.has(key)) continue;
    files.add(key);
    for (const m of readFileSync(file, 'utf8').matchAll(IMPORT)) {
      if (m[2]) continue;
      const spec = (m[3] ?? m[4]) as string;
      if (spec.startsWith('.')) todo.push(resolve(dirname(file), spec.replace(/\.js$/, ext)));
      else if (!spec.startsWith('node:'))
        packages.add(spec.startsWith('@') ? spec : (spec.split('/')[0] as string));
    }
  }
  return { files, packages };
}

test("a worker thread's static imports reach no module or package only the primary needs", () => {
  const { files, packages } = staticGraph(`src/server/worker${ext}`);
  assert.ok(files.has(`src/dataplane/listeners/manager${ext}`), 'the graph is followed');
  const primaryOnly = [
    /^src\/admin\//,
    /^src\/edges\/xds\/(client|stream|lrs|rest|file)/,
    /^src\/edges\/event-log\./,
    /^src\/control\/(history|replay|log-tail)/,
    /^src\/context\./,
    /^src\/dataplane\/workers\/(pool|collect)\./,
    /^src\/server\/(main|edges|shutdown|hot-restart\/(child|parent))/,
    /^views\/(snapshot-diff|redact)\./,
  ];
  assert.deepEqual(
    [...files].filter((f) => primaryOnly.some((p) => p.test(f))),
    [],
  );
  for (const pkg of ['express', 'yaml', 'fast-json-patch', '@grpc/grpc-js', '@grpc/proto-loader'])
    assert.ok(!packages.has(pkg), `${pkg} is loaded by a worker thread`);
});
