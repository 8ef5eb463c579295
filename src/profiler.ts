import { writeFile } from 'node:fs/promises';
import { Session } from 'node:inspector/promises';

export type ProfilerKind = 'cpu' | 'heap';

/**
 * The file a profile goes to: the CPU profile at `path` (a `.cpuprofile` JSON that Chrome
 * DevTools opens), the heap profile at `<path>.heapprofile`; a data-plane worker's carries
 * `.worker-<id>` after `path`, so every thread of one server writes its own file.
 */
export function profileFile(path: string, kind: ProfilerKind, workerId?: number): string {
  const base = workerId === undefined ? path : `${path}.worker-${workerId}`;
  return kind === 'cpu' ? base : `${base}.heapprofile`;
}

/** This process's V8 profilers: one inspector session per kind while it runs. */
export class Profilers {
  private readonly sessions: Partial<Record<ProfilerKind, Session>> = {};

  isRunning(kind: ProfilerKind): boolean {
    return this.sessions[kind] !== undefined;
  }

  /** Starts V8's CPU profiler (`cpu`) or sampling heap profiler (`heap`). */
  async start(kind: ProfilerKind): Promise<void> {
    const session = new Session();
    session.connect();
    // Registered before the first await, so a second request meanwhile sees it running
    // instead of starting a session nobody would stop.
    this.sessions[kind] = session;
    try {
      if (kind === 'cpu') {
        await session.post('Profiler.enable');
        await session.post('Profiler.start');
      } else {
        await session.post('HeapProfiler.enable');
        await session.post('HeapProfiler.startSampling');
      }
    } catch (err) {
      if (this.sessions[kind] === session) delete this.sessions[kind];
      session.disconnect();
      throw err;
    }
  }

  /** Stops the profiler and writes its profile to `file`. */
  async stop(kind: ProfilerKind, file: string): Promise<string> {
    const session = this.sessions[kind];
    if (!session) throw new Error(`${kind} profiler is not running`);
    delete this.sessions[kind];
    try {
      const result =
        kind === 'cpu'
          ? await session.post('Profiler.stop')
          : await session.post('HeapProfiler.stopSampling');
      await writeFile(file, JSON.stringify(result.profile));
      return file;
    } finally {
      session.disconnect();
    }
  }
}
