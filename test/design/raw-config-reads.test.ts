/**
 * Config is read raw in one place per resource, its compile step; everything else reads what
 * the step returned (docs/design.md, "Config compiles once"). This counts the raw reads left
 * outside the compile steps (`objectOf`, `arrayOf`, `listOf` on a config's JSON) and holds
 * their number to a ceiling that only goes down. Lower CEILING when you remove some; a new
 * field is compiled in its compile step, never read again where it acts.
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

/** The repository root, from `test/design` (tsx) or `dist/test/design` (compiled). */
const ROOT = fileURLToPath(
  new URL(import.meta.url.includes('/dist/') ? '../../../' : '../../', import.meta.url),
);
const FOLDERS = ['src', 'events', 'reducers', 'views'];
const HELPERS = new Set(['objectOf', 'arrayOf', 'listOf']);

/**
 * Where compile steps live: the compile room, and the pure halves of compile steps that the
 * reducers and views derive by identity (they may not import src/).
 */
const COMPILE_ROOMS = ['src/config/', 'reducers/settings/'];
/** Compile modules that still live beside their consumer (`tcp/config.ts`, `hcm-config.ts`). */
const COMPILE_MODULE = /(^|\/|-)config\.ts$/;
/** Compile steps that still live beside their consumer (they move to src/config/ in time). */
const COMPILE_STEP = /^(compile|check|validate)/;

/**
 * The most raw reads allowed outside the compile steps: 110 once the Cluster compiled in
 * src/config/ (152 before, when compile modules beside their consumers were counted too), 96
 * once a cluster's members were read once by identity (reducers/settings/endpoints.ts), 80
 * once the SDS and RDS names a config asks discovery for were read once by identity, in
 * src/config/ with the string matchers and the config source, 74 once the routes' cluster check
 * joined them, 61 once the TLS contexts' compile steps did, 51 once the overload manager and
 * the outlier event log were read compiled and the event filters' list splitter stopped
 * sharing the config helper's name, 45 once the xDS client's watches read the compiled
 * cluster's EDS source and the bootstrap's compiled dynamic sources, 36 once `/server_info` and
 * the cluster manager read the bootstrap's node once (reducers/settings/node.ts), 21 once the
 * RBAC engine's and the access log filters' rule compilers (run once per config, returning
 * closures) were named as the compile steps they are, 18 once the HTTP connection manager's
 * user agent and tracer names read the node there too, 15 once the route table's body and
 * metadata-match helpers and the per-filter override's body were named as the compile steps
 * they are, 14 once the HTTP connection managers' tracers read the bootstrap's tracing compiled
 * once per bootstrap, 10 once the bootstrap's stats settings (flush, tags, the hystrix sink)
 * compiled once per bootstrap (src/config/stats.ts), 7 once the config dump read a config
 * source's API version with the pure half of its compile step (reducers/settings/config-source.ts);
 * each read left says why where it is.
 */
const CEILING = 7;

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(full);
    return entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts') ? [full] : [];
  });
}

/** The name a function is known by: its own, or the variable an arrow or expression is assigned to. */
function functionName(node: ts.Node): string | null {
  if ((ts.isFunctionDeclaration(node) || ts.isMethodDeclaration(node)) && node.name)
    return node.name.getText();
  if ((ts.isArrowFunction(node) || ts.isFunctionExpression(node)) && ts.isVariableDeclaration(node.parent))
    return node.parent.name.getText();
  return null;
}

/** Line numbers of the raw reads in `text` outside functions named as compile steps. */
function rawReads(text: string): number[] {
  const source = ts.createSourceFile('x.ts', text, ts.ScriptTarget.Latest, true);
  const lines: number[] = [];
  const visit = (node: ts.Node, inStep: boolean): void => {
    const name = functionName(node);
    const step = inStep || (name !== null && COMPILE_STEP.test(name));
    if (
      !step &&
      ts.isCallExpression(node) &&
      ts.isIdentifier(node.expression) &&
      HELPERS.has(node.expression.text)
    )
      lines.push(source.getLineAndCharacterOfPosition(node.getStart()).line + 1);
    ts.forEachChild(node, (child) => visit(child, step));
  };
  visit(source, false);
  return lines;
}

function readsOutsideCompileSteps(): Map<string, number[]> {
  const out = new Map<string, number[]>();
  for (const folder of FOLDERS)
    for (const file of sourceFiles(join(ROOT, folder))) {
      const path = relative(ROOT, file);
      if (COMPILE_ROOMS.some((room) => path.startsWith(room)) || COMPILE_MODULE.test(path)) continue;
      const lines = rawReads(readFileSync(file, 'utf8'));
      if (lines.length > 0) out.set(path, lines);
    }
  return out;
}

test(`at most ${CEILING} raw config reads remain outside the compile steps`, () => {
  const found = readsOutsideCompileSteps();
  const total = [...found.values()].reduce((n, lines) => n + lines.length, 0);
  const where = [...found]
    .sort(([, a], [, b]) => b.length - a.length)
    .map(([file, lines]) => `${file}: ${lines.join(', ')}`);
  assert.ok(total <= CEILING, `${total} raw reads (ceiling ${CEILING}):\n  ${where.join('\n  ')}`);
  // A guard against a walk that finds nothing, and so passes whatever the code does.
  assert.ok(total > 0 && found.size > 1, `only ${total} raw reads found under ${ROOT}`);
});

test('the count sees reads outside compile steps and skips those inside', () => {
  const sample = [
    'const a = objectOf(config.x);', // 1: counted
    'function compileThing(raw) { return arrayOf(raw.list); }', // 2: a compile step
    'const checkIt = (raw) => listOf(raw.items);', // 3: a compile step
    'function serve(raw) {', // 4
    '  return listOf(raw.items).map((i) => objectOf(i));', // 5: counted twice
    '}',
    'other.objectOf(x);', // 7: not the helper
  ].join('\n');
  assert.deepEqual(rawReads(sample), [1, 5, 5]);
});
