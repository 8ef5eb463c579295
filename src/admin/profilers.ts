import { writeFile } from 'node:fs/promises';
import { Session } from 'node:inspector/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { workerPoolOf } from '../dataplane/workers/pool.js';
import type { ServerContext } from '../server/context.js';

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

export type ProfilerKind = 'cpu' | 'heap';

/**
 * The file a profile goes to: the CPU profile at `path` (a `.cpuprofile` JSON that Chrome
 * DevTools opens), the heap profile at `<path>.heapprofile`; a data-plane worker's carries
 * `.worker-<id>` after `path`, so every process of one server writes its own file.
 */
export function profileFile(path: string, kind: ProfilerKind, workerId?: number): string {
  const base = workerId === undefined ? path : `${path}.worker-${workerId}`;
  return kind === 'cpu' ? base : `${base}.heapprofile`;
}

/** Open inspector sessions, one per profiler kind per server. */
const sessions = new WeakMap<ServerContext, Partial<Record<ProfilerKind, Session>>>();

function sessionsOf(ctx: ServerContext): Partial<Record<ProfilerKind, Session>> {
  let own = sessions.get(ctx);
  if (!own) {
    own = {};
    sessions.set(ctx, own);
  }
  return own;
}

/** Whether this process runs the profiler (the primary's says whether the server's does). */
export function isProfiling(ctx: ServerContext, kind: ProfilerKind): boolean {
  return sessionsOf(ctx)[kind] !== undefined;
}

/** Starts V8's CPU profiler (`cpu`) or sampling heap profiler (`heap`) in this process. */
export async function startLocalProfiler(ctx: ServerContext, kind: ProfilerKind): Promise<void> {
  const session = new Session();
  session.connect();
  // Registered before the first await, so a second request meanwhile sees it running
  // instead of starting a session nobody would stop.
  const own = sessionsOf(ctx);
  own[kind] = session;
  try {
    if (kind === 'cpu') {
      await session.post('Profiler.enable');
      await session.post('Profiler.start');
    } else {
      await session.post('HeapProfiler.enable');
      await session.post('HeapProfiler.startSampling');
    }
  } catch (err) {
    if (own[kind] === session) delete own[kind];
    session.disconnect();
    throw err;
  }
}

/** Stops this process's profiler and writes its profile to `file`. */
export async function stopLocalProfiler(
  ctx: ServerContext,
  kind: ProfilerKind,
  file: string,
): Promise<string> {
  const own = sessionsOf(ctx);
  const session = own[kind];
  if (!session) throw new Error(`${kind} profiler is not running`);
  delete own[kind];
  try {
    const result =
      kind === 'cpu' ? await session.post('Profiler.stop') : await session.post('HeapProfiler.stopSampling');
    await writeFile(file, JSON.stringify(result.profile));
    return file;
  } finally {
    session.disconnect();
  }
}

/**
 * Starts the profiler in this process and, with `--concurrency` > 1, in every data-plane
 * worker, where the traffic is served. A worker forked later (after a crash) starts
 * unprofiled.
 */
export async function startProfiler(ctx: ServerContext, kind: ProfilerKind): Promise<void> {
  await startLocalProfiler(ctx, kind);
  const pool = workerPoolOf(ctx);
  if (!pool) return;
  const answers = await pool.ask(
    { kind: 'profiler', profiler: kind, enable: true, path: profilePath(ctx) },
    WORKER_PROFILER_TIMEOUT_MS,
  );
  for (const a of answers) if (a.error) ctx.log.get('admin').warn(`${kind} profiler in a worker: ${a.error}`);
}

/**
 * Stops the profiler everywhere `startProfiler` started it and writes each process's
 * profile (see `profileFile`). Resolves to the files written, the primary's first.
 */
export async function stopProfiler(ctx: ServerContext, kind: ProfilerKind): Promise<string[]> {
  const path = profilePath(ctx);
  const own = await stopLocalProfiler(ctx, kind, profileFile(path, kind));
  const pool = workerPoolOf(ctx);
  if (!pool) return [own];
  const answers = await pool.ask(
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
