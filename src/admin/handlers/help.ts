import { helpText } from '../../../views/help/render.js';
import { renderHome } from '../../../views/home/render.js';
import { homeSummary } from '../../../views/home/summary.js';
import { text } from '../../../views/result.js';
import type { HandlerDescriptor } from '../registry.js';

/** `/` and `/help`: both generated from the table being served; `/` opens with the server's state. */
export const helpHandlers: HandlerDescriptor[] = [
  {
    path: '/',
    help: 'Admin home page',
    mutates: false,
    params: [],
    handle: (req, ctx) =>
      renderHome(req.table, homeSummary(req.state, ctx.store.scheduler.now()), {
        readOnly: ctx.options.adminReadOnly,
      }),
  },
  {
    path: '/help',
    help: 'print out list of admin commands',
    mutates: false,
    params: [],
    handle: (req) => text(helpText(req.table)),
  },
];
