/** Shared pieces of the bootstrap loader tests: fixture paths, a loader call with defaults, the CLI. */
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { type LoadOptions, type LoadResult, loadBootstrap, readBootstrap } from '../../src/bootstrap/load.js';

/** A loaded bootstrap walked by tests: deep property access without a cast at every step. */
// biome-ignore lint/suspicious/noExplicitAny: test assertions walk arbitrary canonical JSON
export type Dump = Record<string, any>;

const compiled = import.meta.url.includes('/dist/');

/** The repository root, from `test/helpers` (tsx) or `dist/test/helpers` (compiled). */
export const root = fileURLToPath(new URL(compiled ? '../../../' : '../../', import.meta.url));

/** `fixtures/bootstrap/<name>` as an absolute path. */
export function fixture(name: string): string {
  return join(root, 'fixtures', 'bootstrap', name);
}

/** `loadBootstrap` with every option not given at its default. */
export function load(options: Partial<LoadOptions>): LoadResult {
  return loadBootstrap({
    configPath: '',
    configYaml: '',
    allowUnknownStaticFields: false,
    disableExtensions: [],
    ...options,
  });
}

/** Reads and decodes without compiling: for tests of the formats, not of what serves. */
export function read(options: Partial<LoadOptions>): LoadResult {
  return readBootstrap({
    configPath: '',
    configYaml: '',
    allowUnknownStaticFields: false,
    disableExtensions: [],
    ...options,
  });
}

/** Loads YAML text given as `--config-yaml`. */
export function loadYaml(yaml: string, options: Partial<LoadOptions> = {}): LoadResult {
  return load({ configYaml: yaml, ...options });
}

/** Errors of a failed load (fails the test when the load succeeded). */
export function errorsOf(result: LoadResult): string[] {
  if (result.ok)
    throw new Error(`expected the load to fail, it succeeded: ${JSON.stringify(result.bootstrap)}`);
  return result.errors;
}

/** The bootstrap of a successful load (fails the test with the errors otherwise). */
export function bootstrapOf(result: LoadResult): Extract<LoadResult, { ok: true }>['bootstrap'] {
  if (!result.ok) throw new Error(`expected the load to succeed:\n${result.errors.join('\n')}`);
  return result.bootstrap;
}

/**
 * Runs the `proxy` command (the compiled CLI when the tests are compiled, the TypeScript
 * source through tsx otherwise) and resolves to its exit code and output.
 */
export function runCli(args: string[]): Promise<{ status: number | null; stdout: string; stderr: string }> {
  const entry = compiled ? join(root, 'dist', 'src', 'main.js') : join(root, 'src', 'main.ts');
  const code = `const { main } = await import(${JSON.stringify(pathToFileURL(entry).href)}); await main(process.argv.slice(1));`;
  const nodeArgs = [
    ...(compiled ? [] : ['--import', 'tsx']),
    '--input-type=module',
    '-e',
    code,
    '--',
    ...args,
  ];
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      nodeArgs,
      { cwd: root, encoding: 'utf8', timeout: 60_000 },
      (err, stdout, stderr) => {
        const status = err ? (typeof err.code === 'number' ? err.code : null) : 0;
        resolve({ status, stdout, stderr });
      },
    );
  });
}
