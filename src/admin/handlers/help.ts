import { helpText } from '../../../views/help/render.js';
import { renderHome } from '../../../views/home/render.js';
import { text } from '../../../views/result.js';
import type { HandlerDescriptor } from '../registry.js';
// The table lists these handlers too; it is read when a request comes, after every module loaded.
import { handlers } from './index.js';

/** `/` and `/help`: both generated from the descriptor table. */
export const helpHandlers: HandlerDescriptor[] = [
  {
    path: '/',
    help: 'Admin home page',
    mutates: false,
    params: [],
    handle: () => renderHome(handlers),
  },
  {
    path: '/help',
    help: 'print out list of admin commands',
    mutates: false,
    params: [],
    handle: () => text(helpText(handlers)),
  },
];
