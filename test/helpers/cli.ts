/** Runs the real `proxy` command in a child process, from the build or (under tsx) the sources. */
import { type ChildProcess, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const compiled = import.meta.url.includes('/dist/');

/** The repository root, from `test/helpers` (tsx) or `dist/test/helpers` (compiled). */
export const repoRoot = fileURLToPath(new URL(compiled ? '../../../' : '../../', import.meta.url));

/**
 * `node bin/proxy.js ARGS` against the build; the same `main` through tsx from the sources.
 * With `ipc`, the child has an IPC channel to this process (as `proxy restarter` gives it).
 * `prefix` runs it through a command, e.g. `['ip', 'netns', 'exec', NAME]` (which execs it).
 */
export function spawnProxy(
  args: string[],
  env: NodeJS.ProcessEnv = {},
  ipc = false,
  prefix: string[] = [],
): ChildProcess {
  const argv = compiled
    ? ['bin/proxy.js', ...args]
    : [
        '--import',
        'tsx',
        '--input-type=module',
        '-e',
        "import { main } from './src/main.ts'; await main(process.argv.slice(1));",
        '--',
        ...args,
      ];
  const [command = process.execPath, ...rest] = [...prefix, process.execPath];
  return spawn(command, [...rest, ...argv], {
    cwd: repoRoot,
    env: { ...process.env, ...env },
    ...(ipc ? { stdio: ['pipe', 'pipe', 'pipe', 'ipc'] } : {}),
  });
}

export interface ProxyRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs `proxy ARGS` to completion (killed after `timeoutMs`); `ipc` as for `spawnProxy`. */
export function runProxy(
  args: string[],
  env: NodeJS.ProcessEnv = {},
  timeoutMs = 15000,
  ipc = false,
): Promise<ProxyRun> {
  return new Promise((resolve, reject) => {
    const child = spawnProxy(args, env, ipc);
    let stdout = '';
    let stderr = '';
    child.stdout?.on('data', (d: Buffer) => {
      stdout += d;
    });
    child.stderr?.on('data', (d: Buffer) => {
      stderr += d;
    });
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`proxy ${args.join(' ')} did not exit within ${timeoutMs} ms; stderr: ${stderr}`));
    }, timeoutMs);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}
