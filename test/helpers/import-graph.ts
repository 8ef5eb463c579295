/**
 * The import graph of the product code (src/, events/, reducers/, views/), file by file, as
 * the design tests read it: every `import`, `export ... from` and `import()`, type-only ones
 * included, comments left out.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The repository root, from `test/helpers` (tsx) or `dist/test/helpers` (compiled). */
export const ROOT = fileURLToPath(
  new URL(import.meta.url.includes('/dist/') ? '../../../' : '../../', import.meta.url),
);
export const FOLDERS = ['src', 'events', 'reducers', 'views'];

/** `import ... from '...'`, `export ... from '...'`, `import '...'` and `import('...')`. */
const IMPORT =
  /(?:^|[\s;])(?:import|export)\s+(?:type\s+)?(?:[^'"`;]*?\s+from\s+)?['"]([^'"]+)['"]|\bimport\(\s*['"]([^'"]+)['"]\s*\)/g;

export function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(full);
    return entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts') ? [full] : [];
  });
}

/** Comments hold example imports (`@example`, docs); they are not edges. */
function withoutComments(text: string): string {
  return text.replace(/\/\*[\s\S]*?\*\//g, '').replace(/^\s*\/\/.*$/gm, '');
}

/** The relative module specifiers a source text imports. */
export function importsOf(text: string): string[] {
  return [...withoutComments(text).matchAll(IMPORT)]
    .map((m) => m[1] ?? m[2] ?? '')
    .filter((spec) => spec.startsWith('.'));
}

/** Each product file (repository-relative) and the product files it imports. */
export function importGraph(): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  for (const folder of FOLDERS) {
    for (const file of sourceFiles(join(ROOT, folder))) {
      const targets = importsOf(readFileSync(file, 'utf8')).map((spec) =>
        relative(ROOT, resolve(dirname(file), spec).replace(/\.js$/, '.ts')),
      );
      graph.set(relative(ROOT, file), [...new Set(targets)].sort());
    }
  }
  return graph;
}
