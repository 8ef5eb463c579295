import { CONFIG_TYPE } from '../../../bootstrap/extensions.js';
import { checkFields } from '../../../bootstrap/honoured.js';
import type { HttpFilterFactory } from './api.js';

/** CORS: its policy is on routes and virtual hosts, so its own message (and per-route override) has no fields. */
export const corsFactory: HttpFilterFactory<null> = {
  configType: CONFIG_TYPE.cors,
  fieldTables: { Cors: {} },
  compile(config, path, report) {
    checkFields(config, path, report, {}, 'Cors');
    return null;
  },
  install(chain) {
    chain.routeFilters.push({ kind: 'cors' });
  },
  perRoute(config, path, report) {
    checkFields(config, path, report, {}, 'Cors');
    return null;
  },
};
