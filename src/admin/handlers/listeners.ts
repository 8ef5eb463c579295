import { drainStarted } from '../../../events/index.js';
import { listenersData, renderListeners } from '../../../views/listeners/render.js';
import { eventHandler } from '../event-handler.js';
import type { HandlerDescriptor } from '../registry.js';

export const listenersHandlers: HandlerDescriptor[] = [
  {
    path: '/listeners',
    help: 'print listener info',
    mutates: false,
    params: [{ name: 'format', help: 'File format to use', kind: 'enum', values: ['text', 'json'] }],
    snapshotView: true,
    handle: (req) => renderListeners(req.state, req.query.get('format') === 'json' ? 'json' : 'text'),
    data: (req) => listenersData(req.state),
  },
  eventHandler({
    path: '/drain_listeners',
    help: 'drain listeners',
    params: [
      {
        name: 'graceful',
        help: 'When draining listeners, enter a graceful drain period prior to closing listeners. This behaviour and duration is configurable via server options or CLI',
        kind: 'flag',
      },
      {
        name: 'inboundonly',
        help: 'Drains all inbound listeners. traffic_direction field in envoy_v3_api_msg_config.listener.v3.Listener is used to determine whether a listener is inbound or outbound.',
        kind: 'flag',
      },
    ],
    events: (req, ctx) => {
      const graceful = req.query.has('graceful');
      return [
        drainStarted({
          inboundOnly: req.query.has('inboundonly'),
          graceful,
          strategy: ctx.options.drainStrategy,
          drainTimeMs: graceful ? ctx.options.drainTimeS * 1000 : 0,
        }),
      ];
    },
  }),
];
