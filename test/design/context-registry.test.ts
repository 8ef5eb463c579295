/**
 * No registry keyed by a context (docs/design.md, "The context"): a facility is a named field
 * of the context, made with it, never a side table some module fills later.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { test } from 'node:test';
import { FOLDERS, ROOT, sourceFiles } from '../helpers/import-graph.js';

/** A map whose key is a context or its core: `WeakMap<ServerContext, ...>`, `Map<Core, ...>`. */
const REGISTRY = /\b(?:Weak)?Map\s*<\s*(?:ServerContext|Core|Pick<\s*(?:ServerContext|Core)\b)/;

test('no map is keyed by a context', () => {
  const found = FOLDERS.flatMap((folder) => sourceFiles(join(ROOT, folder)))
    .filter((file) => REGISTRY.test(readFileSync(file, 'utf8')))
    .map((file) => relative(ROOT, file));
  assert.deepEqual(found, []);
});

test('the check sees a registry', () => {
  assert.ok(REGISTRY.test('const byContext = new WeakMap<ServerContext, Figures>();'));
  assert.ok(REGISTRY.test('const m = new Map<Pick<Core, "store">, X>();'));
  assert.ok(!REGISTRY.test('const m = new WeakMap<RawCluster, ConnectOptions>();'));
});
