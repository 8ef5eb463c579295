import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';

/**
 * `--enable-core-dump`: Node cannot call setrlimit itself, so on Linux the process asks
 * util-linux `prlimit` to raise its own RLIMIT_CORE soft limit to the hard limit (allowed
 * without privileges). Elsewhere it does nothing, as the spec says. Returns a warning when
 * the limit could not be raised, or null.
 */
export function enableCoreDump(): string | null {
  if (process.platform !== 'linux') return null;
  try {
    const limits = readFileSync('/proc/self/limits', 'utf8');
    const row = limits.split('\n').find((l) => l.startsWith('Max core file size'));
    const hard = row?.slice('Max core file size'.length).trim().split(/\s+/)[1];
    if (!hard) return 'cannot enable core dumps: no core file size in /proc/self/limits';
    execFileSync('prlimit', ['--pid', String(process.pid), `--core=${hard}:`], { stdio: 'pipe' });
    return null;
  } catch (err) {
    return `cannot enable core dumps (needs util-linux prlimit): ${(err as Error).message.split('\n')[0]}`;
  }
}
