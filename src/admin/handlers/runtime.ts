import { runtimeModified } from '../../../events/index.js';
import { text } from '../../../views/result.js';
import { renderRuntime, runtimeData } from '../../../views/runtime/render.js';
import { eventHandler } from '../event-handler.js';
import type { HandlerDescriptor } from '../registry.js';

const USAGE =
  'usage: /runtime_modify?key1=value1&key2=value2&keyN=valueN\n' +
  '       or send the parameters as form values\n' +
  'use an empty value to remove a previously added override';

export const runtimeHandlers: HandlerDescriptor[] = [
  {
    path: '/runtime',
    help: 'print runtime values',
    mutates: false,
    params: [],
    snapshotView: true,
    handle: (req) => renderRuntime(req.state),
    data: (req) => runtimeData(req.state),
  },
  eventHandler({
    path: '/runtime_modify',
    help: 'modify runtime values',
    params: [],
    events: (req) => {
      const values = Object.fromEntries(req.query);
      if (Object.keys(values).length === 0) return text(USAGE, 400);
      if (!req.state.runtime.layers.some((l) => l.kind === 'admin'))
        return text('No admin layer specified', 503);
      return [runtimeModified({ values })];
    },
  }),
];
