import { countersReset } from '../../../events/index.js';
import { eventHandler } from '../event-handler.js';
import type { HandlerDescriptor } from '../registry.js';

export const countersHandlers: HandlerDescriptor[] = [
  eventHandler({
    path: '/reset_counters',
    help: 'reset all counters to zero',
    params: [],
    events: () => [countersReset({})],
  }),
];
