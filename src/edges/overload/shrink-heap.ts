import { compiledOverloadManager } from '../../config/overload.js';
import type { ServerContext } from '../../context-core.js';
import { v8Collector } from '../../memory.js';

/**
 * The overload action shrink_heap in this process: while it is active, V8 collects garbage at
 * once and then every `refresh_interval`, as the reference releases free heap to the system
 * periodically. Every process runs it (the primary from its edges, each data-plane worker at
 * start), since each has its own heap and folds the same action events. Returns its stop, or
 * null when the bootstrap has no shrink_heap action.
 */
export function startShrinkHeap(ctx: ServerContext): (() => void) | null {
  const spec = compiledOverloadManager(ctx.store.state.bootstrap?.config);
  if (!spec) return null;
  if (!spec.actions.some((a) => a.kind === 'shrink_heap')) return null;
  let gc: (() => void) | null = null;
  let timer: NodeJS.Timeout | null = null;
  const watch = ctx.store.state$.subscribe((state) => {
    const on = state.server.overload?.shrink_heap === true;
    if (on && !timer) {
      gc ??= v8Collector();
      gc();
      timer = setInterval(gc, spec.refreshMs);
      timer.unref();
    } else if (!on && timer) {
      clearInterval(timer);
      timer = null;
    }
  });
  return () => {
    watch.unsubscribe();
    if (timer) clearInterval(timer);
  };
}
