import { readFile } from 'node:fs/promises';
import { type OverloadActionKind, overloadActionChanged } from '../../../events/index.js';
import { compiledOverloadManager, type MonitorSpec } from '../../config/overload.js';
import type { ServerContext } from '../../context-core.js';
import { memoryFigures } from '../../memory.js';

/**
 * The injected resource's pressure: the file holds one number from 0 to 1, re-read at every
 * refresh (the reference's test monitor, which makes pressure something a test can set).
 */
async function injectedPressure(filename: string): Promise<number> {
  const text = (await readFile(filename, 'utf8')).trim();
  const value = text === '' ? Number.NaN : Number(text);
  if (Number.isNaN(value)) throw new Error(`failed to parse injected resource pressure from ${filename}`);
  if (value < 0 || value > 1) throw new Error(`injected resource pressure ${value} is outside 0..1`);
  return value;
}

/**
 * The fixed heap's pressure: bytes the JS heaps hold (used heap plus external memory, Buffers
 * included) over `max_heap_size_bytes`, summed over this process and every data-plane worker,
 * since together they are what the reference's one process is.
 */
async function heapPressure(ctx: ServerContext, maxBytes: number, waitMs: number): Promise<number> {
  const own = memoryFigures();
  let bytes = own.heapUsed + own.external;
  const workers = ctx.workers ? await ctx.workers.ask({ kind: 'memory' }, waitMs) : [];
  for (const w of workers) bytes += w.heapUsed + w.external;
  return Math.min(1, bytes / maxBytes);
}

/** The pressure of a monitor that has one (the connection limit acts at the listeners instead). */
function readPressure(
  ctx: ServerContext,
  monitor: Exclude<MonitorSpec, { kind: 'global_downstream_max_connections' }>,
  waitMs: number,
): Promise<number> {
  return monitor.kind === 'fixed_heap'
    ? heapPressure(ctx, monitor.maxHeapBytes, waitMs)
    : injectedPressure(monitor.filename);
}

/**
 * Starts the overload manager of the bootstrap's `overload_manager`, if it has one: every
 * `refresh_interval` it reads each resource monitor (`overload.<monitor>.pressure` in
 * percent, `failed_updates`, `skipped_updates` while a read is still pending) and sets each
 * action active while any of its triggers' pressures is at or above its threshold
 * (`overload.<action>.active`). A change of an action is a `server/overload-action-changed`
 * event, so every data-plane worker folds it as the primary does. Returns its stop.
 */
export function startOverloadManager(ctx: ServerContext): (() => void) | null {
  const spec = compiledOverloadManager(ctx.store.state.bootstrap?.config);
  if (!spec) return null;
  const log = ctx.log.get('main');
  const scope = ctx.stats.scope('overload');
  const monitors = spec.monitors
    .flatMap((m) => (m.kind === 'global_downstream_max_connections' ? [] : [m]))
    .map((m) => ({
      spec: m,
      pressure: scope.gauge(`${m.name}.pressure`),
      failed: scope.counter(`${m.name}.failed_updates`),
      skipped: scope.counter(`${m.name}.skipped_updates`),
    }));
  const actions = spec.actions.map((a) => ({ spec: a, active: scope.gauge(`${a.name}.active`) }));
  const pressures = new Map<string, number>();
  const active = new Set<OverloadActionKind>(
    Object.keys(ctx.store.state.server.overload ?? {}) as OverloadActionKind[],
  );
  let pending = false;
  let stopped = false;

  const refresh = async (): Promise<void> => {
    if (pending) {
      for (const m of monitors) m.skipped.inc();
      return;
    }
    pending = true;
    try {
      await Promise.all(
        monitors.map(async (m) => {
          try {
            const p = await readPressure(ctx, m.spec, spec.refreshMs);
            pressures.set(m.spec.name, p);
            m.pressure.set(Math.round(p * 100));
          } catch (err) {
            m.failed.inc();
            log.debug({ err, monitor: m.spec.name }, 'resource monitor update failed');
          }
        }),
      );
      if (stopped) return;
      for (const a of actions) {
        const on = a.spec.triggers.some((t) => (pressures.get(t.monitor) ?? 0) >= t.threshold);
        a.active.set(on ? 1 : 0);
        if (on !== active.has(a.spec.kind)) {
          if (on) active.add(a.spec.kind);
          else active.delete(a.spec.kind);
          log.info({ action: a.spec.name, active: on }, 'overload action changed');
          ctx.store.dispatch(overloadActionChanged({ action: a.spec.kind, active: on }), 'overload');
        }
      }
    } finally {
      pending = false;
    }
  };

  const tick = () => {
    refresh().catch((err: unknown) => log.error({ err }, 'overload refresh failed'));
  };
  const timer = setInterval(tick, spec.refreshMs);
  timer.unref();
  tick();
  return () => {
    stopped = true;
    clearInterval(timer);
  };
}
