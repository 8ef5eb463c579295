import { Session } from 'node:inspector/promises';
import { writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ServerContext } from '../server/context.js';

/** Where profiles go without `admin.profile_path` (the reference's `/var/log/envoy/envoy.prof` needs root). */
export const DEFAULT_PROFILE_PATH = join(tmpdir(), 'proxy.prof');

/** `admin.profile_path` of the running bootstrap, or the default. */
export function profilePath(ctx: ServerContext): string {
  const admin = (ctx.store.state.bootstrap?.config.admin ?? {}) as { profile_path?: unknown };
  return typeof admin.profile_path === 'string' && admin.profile_path
    ? admin.profile_path
    : DEFAULT_PROFILE_PATH;
}

type Kind = 'cpu' | 'heap';

/** Open inspector sessions, one per profiler kind per server. */
const sessions = new WeakMap<ServerContext, Partial<Record<Kind, Session>>>();

function sessionsOf(ctx: ServerContext): Partial<Record<Kind, Session>> {
  let own = sessions.get(ctx);
  if (!own) {
    own = {};
    sessions.set(ctx, own);
  }
  return own;
}

export function isProfiling(ctx: ServerContext, kind: Kind): boolean {
  return sessionsOf(ctx)[kind] !== undefined;
}

/** Starts V8's CPU profiler (`cpu`) or sampling heap profiler (`heap`) in this process. */
export async function startProfiler(ctx: ServerContext, kind: Kind): Promise<void> {
  const session = new Session();
  session.connect();
  if (kind === 'cpu') {
    await session.post('Profiler.enable');
    await session.post('Profiler.start');
  } else {
    await session.post('HeapProfiler.enable');
    await session.post('HeapProfiler.startSampling');
  }
  sessionsOf(ctx)[kind] = session;
}

/**
 * Stops a profiler and writes its profile: the CPU profile to `profile_path` (a
 * `.cpuprofile` JSON that Chrome DevTools opens), the heap profile to
 * `<profile_path>.heapprofile`. Resolves to the file written.
 */
export async function stopProfiler(ctx: ServerContext, kind: Kind): Promise<string> {
  const own = sessionsOf(ctx);
  const session = own[kind];
  if (!session) throw new Error(`${kind} profiler is not running`);
  delete own[kind];
  try {
    const file = kind === 'cpu' ? profilePath(ctx) : `${profilePath(ctx)}.heapprofile`;
    const result =
      kind === 'cpu' ? await session.post('Profiler.stop') : await session.post('HeapProfiler.stopSampling');
    await writeFile(file, JSON.stringify(result.profile));
    return file;
  } finally {
    session.disconnect();
  }
}
