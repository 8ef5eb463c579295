import { helpText } from '../../../views/help/render.js';
import { renderHome } from '../../../views/home/render.js';
import { text } from '../../../views/result.js';
import type { HandlerDescriptor } from '../registry.js';

/** `/` and `/help`: both generated from the table being served. */
export const helpHandlers: HandlerDescriptor[] = [
  {
    path: '/',
    help: 'Admin home page',
    mutates: false,
    params: [],
    handle: (req) => renderHome(req.table),
  },
  {
    path: '/help',
    help: 'print out list of admin commands',
    mutates: false,
    params: [],
    handle: (req) => text(helpText(req.table)),
  },
];
