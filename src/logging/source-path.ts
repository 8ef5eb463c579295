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

const LOGGING_DIR = dirname(fileURLToPath(import.meta.url));

/** A frame of the logging machinery itself (this folder, or bunyan) rather than of its user. */
function isLoggingFrame(file: string): boolean {
  const path = file.startsWith('file://') ? fileURLToPath(file) : file;
  return dirname(path) === LOGGING_DIR || path.includes(`${sep}node_modules${sep}bunyan${sep}`);
}

/** Where a log call is in the code: file relative to the checkout, line, function. */
export interface SourceLocation {
  file: string;
  line: number;
  func?: string;
}

/**
 * The nearest stack frame outside the logging code: the code that called `log.info()` or
 * `loggers.get()`. (bunyan's own `src: true` finds nothing on Node 20, so this replaces it.)
 */
export function externalCaller(): SourceLocation | undefined {
  const savedPrepare = Error.prepareStackTrace;
  const savedLimit = Error.stackTraceLimit;
  let found: SourceLocation | undefined;
  Error.stackTraceLimit = 30;
  Error.prepareStackTrace = (_err, stack) => {
    for (const frame of stack) {
      const file = frame.getFileName();
      if (!file || file.startsWith('node:') || isLoggingFrame(file)) continue;
      found = { file: relativeSourcePath(file), line: frame.getLineNumber() ?? 0 };
      const func = frame.getFunctionName();
      if (func) found.func = func;
      break;
    }
    return '';
  };
  try {
    // Reading .stack runs prepareStackTrace once, which records the frame.
    void new Error().stack;
  } finally {
    Error.prepareStackTrace = savedPrepare;
    Error.stackTraceLimit = savedLimit;
  }
  return found;
}
