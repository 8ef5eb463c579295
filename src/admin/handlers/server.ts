import type { HandlerDescriptor } from '../registry.js';

export const serverHandlers: HandlerDescriptor[] = [
  {
    path: '/ready',
    help: 'print server state, return 200 if LIVE, otherwise return 503',
    mutates: false,
    params: [],
    handle: (_req, ctx) => {
      const state = ctx.store.state.server.state;
      return {
        status: state === 'LIVE' ? 200 : 503,
        contentType: 'text/plain; charset=UTF-8',
        body: `${state}\n`,
      };
    },
  },
];
