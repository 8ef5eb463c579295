/**
 * The README's "Where is X" tables are how a newcomer finds things in one hop: every path
 * they name exists, every name they say a file holds is in it, and the events-by-family table
 * lists, for each family, every reducer slice its handlers call and every file that makes its
 * events, so a row cannot quietly go stale when code moves.
 */
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { test } from 'node:test';
import { ROOT, sourceFiles } from '../helpers/import-graph.js';

const README = readFileSync(join(ROOT, 'README.md'), 'utf8');

/** The rows of the markdown table that follows `heading`, each as its cells. */
function tableAfter(heading: string): string[][] {
  const start = README.indexOf(`\n${heading}\n`);
  assert.ok(start >= 0, `README has no "${heading}"`);
  const lines = README.slice(start + heading.length + 2).split('\n');
  const first = lines.findIndex((l) => l.startsWith('|'));
  const rows: string[][] = [];
  for (const line of lines.slice(first + 2)) {
    if (!line.startsWith('|')) break;
    rows.push(
      line
        .slice(1, -1)
        .split(' | ')
        .map((c) => c.trim()),
    );
  }
  return rows;
}

/** The backticked names of a cell. */
function quoted(cell: string): string[] {
  return [...cell.matchAll(/`([^`]+)`/g)].map((m) => m[1] as string);
}

const PATH = /^[\w.-]+(\/[\w.-]+)*\/?$/;
/** A quoted name that is a path: a folder (`src/edges/`) or a file (`cluster.ts`); `server/state-changed` is an event. */
const isPath = (name: string) => PATH.test(name) && (name.endsWith('/') || /\.(ts|md|json)$/.test(name));

/**
 * Where a cell's path is: from the root, else beside one named before it in the same cell or
 * in a folder above that one (`filters/router/route.ts` after `src/dataplane/http/exchange.ts`).
 */
function resolveIn(cell: string[]): Array<{ name: string; found: string | null }> {
  const bases: string[] = [];
  return cell.filter(isPath).map((name) => {
    const candidates = [name];
    for (const base of bases)
      for (let dir = base; dir !== '.' && dir !== ''; dir = dirname(dir)) candidates.push(join(dir, name));
    const found = candidates.find((c) => existsSync(join(ROOT, c))) ?? null;
    if (found !== null) bases.unshift(found.endsWith('/') || !/\.\w+$/.test(found) ? found : dirname(found));
    return { name, found };
  });
}

test('every path the "Where is X" tables name exists', () => {
  const rows = [...tableAfter('## Where is X'), ...tableAfter('### Events by family')];
  assert.ok(rows.length > 10);
  const missing = rows.flatMap((row) =>
    row.flatMap((cell) =>
      resolveIn(quoted(cell))
        .filter((p) => p.found === null)
        .map((p) => `${row[0]}: ${p.name}`),
    ),
  );
  assert.deepEqual(missing, []);
});

test('every name the "Where is X" table says a file holds is in that file', () => {
  const wrong: string[] = [];
  let checked = 0;
  for (const row of tableAfter('## Where is X'))
    for (const m of row
      .join(' | ')
      .matchAll(/`([A-Za-z_$][\w$]*)[^`]*`(?: [a-z ]{0,20})? in `([\w./-]+\.ts)`/g)) {
      const [, name, path] = m as unknown as [string, string, string];
      if (!existsSync(join(ROOT, path)) || !readFileSync(join(ROOT, path), 'utf8').includes(name))
        wrong.push(`${name} in ${path}`);
      checked++;
    }
  assert.ok(checked >= 4, `only ${checked} names checked: the pattern no longer reads the table`);
  assert.deepEqual(wrong, []);
});

/** Each event family file's creators by name, and the event types they make. */
function families(): Map<string, { creators: string[]; types: string[] }> {
  const out = new Map<string, { creators: string[]; types: string[] }>();
  for (const file of sourceFiles(join(ROOT, 'events'))) {
    const text = readFileSync(file, 'utf8');
    const found = [...text.matchAll(/export const (\w+) = defineEvent\('([^']+)'\)/g)];
    if (found.length === 0) continue;
    out.set(relative(ROOT, file), {
      creators: found.map((m) => m[1] as string),
      types: found.map((m) => m[2] as string),
    });
  }
  return out;
}

/** The reducer slice files each event type's handler in `reducers/index.ts` calls. */
function slicesByType(): Map<string, Set<string>> {
  const text = readFileSync(join(ROOT, 'reducers/index.ts'), 'utf8');
  const modules = new Map(
    [...text.matchAll(/import \* as (\w+) from '\.\/([\w-]+)\.js'/g)].map((m) => [
      m[1],
      `reducers/${m[2]}.ts`,
    ]),
  );
  const table = text.slice(text.indexOf('export const handlers'));
  const entries = [...table.matchAll(/^ {2}'([\w/-]+)':/gm)];
  const out = new Map<string, Set<string>>();
  entries.forEach((m, i) => {
    const body = table.slice(m.index, entries[i + 1]?.index ?? table.length);
    const used = [...body.matchAll(/\b(\w+)\.\w+\(?/g)]
      .map((c) => modules.get(c[1] as string))
      .filter((p): p is string => p !== undefined);
    out.set(m[1] as string, new Set(used));
  });
  return out;
}

/** The product files that make a family's events: they import the events and call a creator. */
function makers(creators: string[]): string[] {
  const call = new RegExp(`\\b(${creators.join('|')})\\(`);
  return sourceFiles(join(ROOT, 'src'))
    .filter((file) => {
      const text = readFileSync(file, 'utf8');
      return /from '[./]+\/events\/[\w-]+\.js'/.test(text) && call.test(text);
    })
    .map((file) => relative(ROOT, file));
}

test('the events-by-family table names every family, its reducer slices and every file that makes its events', () => {
  const rows = new Map(tableAfter('### Events by family').map((row) => [quoted(row[0] as string)[0], row]));
  const slices = slicesByType();
  for (const [family, { creators, types }] of families()) {
    const row = rows.get(family);
    assert.ok(row, `${family} has no row`);
    const [, reducerCell = '', , makerCell = ''] = row;
    const called = new Set(types.flatMap((t) => [...(slices.get(t) ?? [])]));
    assert.deepEqual(new Set(quoted(reducerCell).filter(isPath)), called, `${family}: reducer slices`);
    const listed = quoted(makerCell).filter(isPath);
    const unlisted = makers(creators).filter((file) => !listed.some((p) => file === p || file.startsWith(p)));
    assert.deepEqual(unlisted, [], `${family}: files that make its events and are not in its row`);
  }
  assert.equal(rows.size, families().size, 'one row per family');
});
