import { checkFields } from '../../../bootstrap/honoured.js';
import type { HttpFilterFactory } from './api.js';

/**
 * The config message, carried here rather than under proto/: the whole extension is this file
 * (and its line in registry.ts), as docs/http-filters.md's "Adding a filter" shows.
 */
const CORS_PROTO = `
syntax = "proto3";
package envoy.config.filter.http.cors.v2;
message Cors {}
`;

/** CORS: its policy is on routes and virtual hosts, so its own message (and per-route override) has no fields. */
export const corsFactory: HttpFilterFactory<null> = {
  name: 'envoy.filters.http.cors',
  aliases: ['envoy.cors'],
  configType: 'envoy.config.filter.http.cors.v2.Cors',
  typeAliases: { 'envoy.extensions.filters.http.cors.v3.Cors': 'envoy.config.filter.http.cors.v2.Cors' },
  schema: { source: CORS_PROTO },
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
