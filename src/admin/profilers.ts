import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ServerContext } from '../context-core.js';
import { type ProfilerKind, profileFile } from '../profiler.js';

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
 * unprofiled.
 */
export async function startProfiler(ctx: ServerContext, kind: ProfilerKind): Promise<void> {
  await ctx.profilers.start(kind);
  if (!ctx.workers) return;
  const answers = await ctx.workers.ask(
    { kind: 'profiler', profiler: kind, enable: true, path: profilePath(ctx) },
    WORKER_PROFILER_TIMEOUT_MS,
  );
  for (const a of answers) if (a.error) ctx.log.get('admin').warn(`${kind} profiler in a worker: ${a.error}`);
}

/**
 * Stops the profiler everywhere `startProfiler` started it and writes each thread's
 * profile (see `profileFile`). Resolves to the files written, the primary's first.
 */
export async function stopProfiler(ctx: ServerContext, kind: ProfilerKind): Promise<string[]> {
  const path = profilePath(ctx);
  const own = await ctx.profilers.stop(kind, profileFile(path, kind));
  if (!ctx.workers) return [own];
  const answers = await ctx.workers.ask(
    { kind: 'profiler', profiler: kind, enable: false, path },
    WORKER_PROFILER_TIMEOUT_MS,
  );
  const files: string[] = [];
  for (const a of answers) {
    if (a.file) files.push(a.file);
    if (a.error) ctx.log.get('admin').warn(`${kind} profiler in a worker: ${a.error}`);
  }
  return [own, ...files.sort()];
}
