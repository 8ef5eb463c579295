import { existsSync } from 'node:fs';
import { basename, dirname, join, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The checkout root: the nearest folder above this module holding package.json. */
function findRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  while (!existsSync(join(dir, 'package.json'))) {
    const parent = dirname(dir);
    if (parent === dir) return process.cwd();
    dir = parent;
  }
  return dir;
}

const ROOT = findRoot();

/**
 * A stack frame's file (`file:///...` URL or absolute path) as a path relative to the
 * checkout root with forward slashes (`src/admin/server.ts`, or `dist/src/...` when
 * running the build); files outside the checkout keep their absolute path.
 */
export function relativeSourcePath(file: string): string {
  const absolute = file.startsWith('file://') ? fileURLToPath(file) : file;
  const rel = relative(ROOT, absolute);
  if (rel.startsWith('..')) return absolute;
  return rel.split(sep).join('/');
}

/** The last path segment: `%s` in the log format. */
export function sourceBasename(path: string): string {
  return basename(path);
}

/** The source file of the code that called the function calling this one (`depth` 0). */
export function callerFile(depth = 0): string {
  const saved = Error.prepareStackTrace;
  let file = '';
  Error.prepareStackTrace = (_err, stack) => {
    file = stack[depth + 2]?.getFileName() ?? '';
    return '';
  };
  try {
    // Reading .stack runs prepareStackTrace once, which records the frame's file.
    void new Error().stack;
  } finally {
    Error.prepareStackTrace = saved;
  }
  return file ? relativeSourcePath(file) : 'unknown';
}
