import type { ProxyEvent } from '../../events/index.js';
import { text } from '../../views/result.js';
import type { ServerContext } from '../context-core.js';
import type { AdminRequest, AdminResponse, HandlerDescriptor } from './registry.js';

type Events = (req: AdminRequest, ctx: ServerContext) => ProxyEvent[] | AdminResponse;

/**
 * A mutation that only dispatches events: `handle` dispatches what `events` returns and
 * answers `OK`; the adapter can also fold them into a copy for `dry_run`.
 */
export function eventHandler(
  spec: Omit<HandlerDescriptor, 'handle' | 'mutates' | 'events'> & { events: Events },
): HandlerDescriptor {
  return {
    ...spec,
    mutates: true,
    handle(req, ctx) {
      const events = spec.events(req, ctx);
      if (!Array.isArray(events)) return events;
      for (const event of events) ctx.store.dispatch(event, 'admin');
      return text('OK\n');
    },
  };
}
