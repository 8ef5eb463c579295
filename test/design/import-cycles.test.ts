/**
 * The import graph of the product code (src/, events/, reducers/, views/) has no circle, and
 * its layers point one way (docs/design.md, "Layers"). Every import counts, type-only ones
 * included: a type-only circle erases at run time but still ties two modules so that neither
 * can be read, tested or moved without the other. Dynamic `import()` counts too.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { importGraph, importsOf, ROOT } from '../helpers/import-graph.js';

/** Strongly connected components with more than one module, or a module importing itself (Tarjan). */
function circles(graph: Map<string, string[]>): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const out: string[][] = [];
  let next = 0;
  const visit = (v: string): void => {
    index.set(v, next);
    low.set(v, next);
    next += 1;
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!graph.has(w)) continue;
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v) as number, low.get(w) as number));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v) as number, index.get(w) as number));
    }
    if (low.get(v) !== index.get(v)) return;
    const component: string[] = [];
    for (;;) {
      const w = stack.pop() as string;
      onStack.delete(w);
      component.push(w);
      if (w === v) break;
    }
    if (component.length > 1 || graph.get(v)?.includes(v)) out.push(component.sort());
  };
  for (const v of [...graph.keys()].sort()) if (!index.has(v)) visit(v);
  return out;
}

/** One shortest path `from -> ... -> from` inside `members`, to show how a circle closes. */
function shortestLoop(graph: Map<string, string[]>, members: Set<string>, from: string): string[] {
  const previous = new Map<string, string>();
  const queue = [from];
  while (queue.length > 0) {
    const v = queue.shift() as string;
    for (const w of graph.get(v) ?? []) {
      if (!members.has(w)) continue;
      if (w === from) {
        const path = [v];
        while (path[0] !== from) path.unshift(previous.get(path[0] as string) as string);
        return [...path, from];
      }
      if (previous.has(w)) continue;
      previous.set(w, v);
      queue.push(w);
    }
  }
  return [from];
}

const graph = importGraph();

test('the import graph of src/, events/, reducers/ and views/ has no circle', () => {
  const found = circles(graph).map((members) => {
    const loop = shortestLoop(graph, new Set(members), members[0] as string);
    return `${loop.join(' -> ')}${members.length > loop.length - 1 ? ` (circle of ${members.length}: ${members.join(', ')})` : ''}`;
  });
  assert.deepEqual(found, [], `import circles:\n  ${found.join('\n  ')}`);
});

test('the check sees imports, type-only ones included', () => {
  // A guard against a parser that finds nothing and so finds no circle.
  assert.ok(graph.size > 100, `only ${graph.size} files found under ${ROOT}`);
  assert.ok(graph.get('src/server/main.ts')?.includes('src/context.ts'));
  const sample = [
    "import type { A } from './a.js';",
    "import {\n  type B,\n  c,\n} from '../b.js';",
    "export * from './c.js';",
    "export type { D } from './d.js';",
    "import './e.js';",
    "const f = await import('./f.js');",
    "import { g } from 'node:g';",
    "// import { h } from './h.js';",
    "/** import { i } from './i.js'; */",
  ].join('\n');
  assert.deepEqual(importsOf(sample), ['./a.js', '../b.js', './c.js', './d.js', './e.js', './f.js']);
  const looped = new Map([
    ['a', ['b']],
    ['b', ['c']],
    ['c', ['a']],
    ['d', ['a']],
  ]);
  assert.deepEqual(circles(looped), [['a', 'b', 'c']]);
  assert.deepEqual(shortestLoop(looped, new Set(['a', 'b', 'c']), 'a'), ['a', 'b', 'c', 'a']);
});

/** Imports from `file` into `folder` (both repository-relative). */
function importsInto(file: string, folder: string): string[] {
  return (graph.get(file) ?? []).filter((t) => t.startsWith(`${folder}/`));
}

test('the data plane imports nothing from the admin', () => {
  const wrong = [...graph.keys()]
    .filter((f) => f.startsWith('src/dataplane/') || f.startsWith('src/upstream/'))
    .flatMap((f) => importsInto(f, 'src/admin').map((t) => `${f} -> ${t}`));
  assert.deepEqual(wrong, []);
});

/**
 * The stats model views render: counters, gauges, histograms, their bins and bucket bounds, tag
 * extraction, the name filter, recent lookups. It stays in src/stats/ (forty modules use it
 * there) as plain data structures: no I/O, no timers, no context (docs/design.md, "Layers").
 */
const STATS_MODEL = [
  'src/stats/bins.ts',
  'src/stats/buckets.ts',
  'src/stats/filter.ts',
  'src/stats/recent-lookups.ts',
  'src/stats/store.ts',
  'src/stats/tags.ts',
];

test('views/ import only events/, reducers/, views/ and the stats model', () => {
  const wrong = [...graph.entries()]
    .filter(([f]) => f.startsWith('views/'))
    .flatMap(([f, targets]) =>
      targets
        .filter(
          (t) => !['events/', 'reducers/', 'views/'].some((a) => t.startsWith(a)) && !STATS_MODEL.includes(t),
        )
        .map((t) => `${f} -> ${t}`),
    );
  assert.deepEqual(wrong, []);
});

test('the stats model imports nothing but itself and the RE2 release helper', () => {
  const wrong = STATS_MODEL.flatMap((f) =>
    (graph.get(f) ?? [])
      .filter((t) => !STATS_MODEL.includes(t) && t !== 'src/re2.ts')
      .map((t) => `${f} -> ${t}`),
  );
  assert.deepEqual(wrong, []);
  assert.deepEqual(graph.get('src/re2.ts'), [], 'src/re2.ts imports no product module');
});

test('the codec imports nothing from the data plane above it, nor anything else of the product', () => {
  // The router, the pools and the health probes read the wire format from below; a codec that
  // imported them back would tie the bottom of the data plane to its top again.
  const codec = [...graph.keys()].filter((f) => f.startsWith('src/dataplane/codec/'));
  assert.ok(codec.includes('src/dataplane/codec/h1-parse.ts'), `codec files: ${codec.join(', ')}`);
  const wrong = codec.flatMap((f) =>
    (graph.get(f) ?? []).filter((t) => !t.startsWith('src/dataplane/codec/')).map((t) => `${f} -> ${t}`),
  );
  assert.deepEqual(wrong, []);
});
