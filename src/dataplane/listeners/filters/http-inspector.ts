/**
 * `envoy.filters.listener.http_inspector`: the listener reads a plain-text connection's first
 * line (../http-sniff.ts) and offers `h2c`, `http/1.1` or `http/1.0` to the chains'
 * `application_protocols`, before it picks a chain.
 */
import { checkFields } from '../../../bootstrap/honoured.js';
import type { ListenerFilterFactory } from './api.js';

const HTTP_INSPECTOR_V2 = 'envoy.config.filter.listener.http_inspector.v2.HttpInspector';

/** The config message has no fields; it is carried here rather than under proto/. */
const HTTP_INSPECTOR_PROTO = `
syntax = "proto3";
package envoy.config.filter.listener.http_inspector.v2;
message HttpInspector {}
`;

export const httpInspectorFactory: ListenerFilterFactory<null> = {
  name: 'envoy.filters.listener.http_inspector',
  aliases: ['envoy.listener.http_inspector'],
  configType: HTTP_INSPECTOR_V2,
  typeAliases: { 'envoy.extensions.filters.listener.http_inspector.v3.HttpInspector': HTTP_INSPECTOR_V2 },
  schema: { source: HTTP_INSPECTOR_PROTO },
  fieldTables: { HttpInspector: {} },
  compile(config, path, report) {
    checkFields(config, path, report, {}, 'HttpInspector');
    return null;
  },
  install(_config, listener) {
    listener.httpInspector = true;
  },
};
