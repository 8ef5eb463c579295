import { parse as parseYaml } from 'yaml';
import { text } from '../../../views/result.js';
import type { HandlerDescriptor } from '../registry.js';

/**
 * `/tap` answers as the reference does when no tap filter has registered for admin
 * configuration: every config id is unknown. A tap extension, once built, registers here.
 */
export const tapHandlers: HandlerDescriptor[] = [
  {
    path: '/tap',
    help: 'tap a running proxy',
    mutates: true,
    params: [],
    handle: (req) => {
      let body: unknown;
      try {
        body = parseYaml(req.body);
      } catch {
        body = undefined;
      }
      const id = body && typeof body === 'object' ? (body as { config_id?: unknown }).config_id : undefined;
      if (typeof id !== 'string' || id === '')
        return text('/tap requires a JSON/YAML body with config_id and tap_config (a TapRequest)\n', 400);
      return text(`Unknown config id '${id}'. No extension has registered with this id.\n`, 400);
    },
  },
];
