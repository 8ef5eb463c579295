import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ServerContext } from '../context-core.js';
import { type ProfilerKind, profileFile } from '../profiler.js';
import { whyNotWritable } from '../writable.js';

/** Where profiles go without `admin.profile_path` (the reference's `/var/log/envoy/envoy.prof` needs root). */
export const DEFAULT_PROFILE_PATH = join(tmpdir(), 'proxy.prof');

/** How long the admin waits for the workers' profilers: stopping one writes its profile first. */
const WORKER_PROFILER_TIMEOUT_MS = 20_000;

/** `admin.profile_path` of the running bootstrap, or the default. */
export function profilePath(ctx: ServerContext): string {
  const admin = (ctx.store.state.bootstrap?.config.admin ?? {}) as { profile_path?: unknown };
  return typeof admin.profile_path === 'string' && admin.profile_path
    ? admin.profile_path
    : DEFAULT_PROFILE_PATH;
}

/**
 * Starts the profiler in this process and, with `--concurrency` > 1, in every data-plane
 * worker, where the traffic is served. A worker started later (after a crash) starts
 * unprofiled. Resolves to why it could not start (its profile could not be written where
 * `profile_path` says, as the reference's profiler fails to open its file), or null.
 */
export async function startProfiler(ctx: ServerContext, kind: ProfilerKind): Promise<string | null> {
  const file = profileFile(profilePath(ctx), kind);
  const problem = whyNotWritable(file);
  if (problem) return `cannot write ${file}: ${problem}`;
  await ctx.profilers.start(kind);
  if (!ctx.workers) return null;
  const answers = await ctx.workers.ask(
    { kind: 'profiler', profiler: kind, enable: true, path: profilePath(ctx) },
    WORKER_PROFILER_TIMEOUT_MS,
  );
  for (const a of answers) if (a.error) ctx.log.get('admin').warn(`${kind} profiler in a worker: ${a.error}`);
  return null;
}

/** What stopping the profilers wrote, the primary's first, and what could not be written. */
export interface StoppedProfilers {
  files: string[];
  unwritten: string[];
}

/**
 * Stops the profiler everywhere `startProfiler` started it and writes each thread's
 * profile (see `profileFile`). A profile that cannot be written does not keep the others
 * running: every thread's profiler stops.
 */
export async function stopProfiler(ctx: ServerContext, kind: ProfilerKind): Promise<StoppedProfilers> {
  const path = profilePath(ctx);
  const stopped: StoppedProfilers = { files: [], unwritten: [] };
  const own = profileFile(path, kind);
  try {
    stopped.files.push(await ctx.profilers.stop(kind, own));
  } catch (err) {
    stopped.unwritten.push(`cannot write ${own}: ${(err as Error).message}`);
  }
  if (!ctx.workers) return stopped;
  const answers = await ctx.workers.ask(
    { kind: 'profiler', profiler: kind, enable: false, path },
    WORKER_PROFILER_TIMEOUT_MS,
  );
  const files: string[] = [];
  for (const a of answers) {
    if (a.file) files.push(a.file);
    if (a.unwritten) stopped.unwritten.push(a.unwritten);
    if (a.error) ctx.log.get('admin').warn(`${kind} profiler in a worker: ${a.error}`);
  }
  stopped.files.push(...files.sort());
  return stopped;
}
