/**
 * `envoy.filters.listener.tls_inspector`: the listener reads each connection's ClientHello
 * (src/tls/client-hello.ts) for SNI and ALPN before it picks a chain. Without the filter it
 * does so only where a chain matches on them (docs/tls.md).
 */
import { checkFields } from '../../../bootstrap/honoured.js';
import type { ListenerFilterFactory } from './api.js';

const TLS_INSPECTOR_V2 = 'envoy.config.filter.listener.tls_inspector.v2.TlsInspector';

export const tlsInspectorFactory: ListenerFilterFactory<null> = {
  name: 'envoy.filters.listener.tls_inspector',
  aliases: ['envoy.listener.tls_inspector'],
  configType: TLS_INSPECTOR_V2,
  typeAliases: { 'envoy.extensions.filters.listener.tls_inspector.v3.TlsInspector': TLS_INSPECTOR_V2 },
  schema: { file: 'envoy/config/filter/listener/tls_inspector/v2.proto' },
  fieldTables: { TlsInspector: {} },
  compile(config, path, report) {
    checkFields(config, path, report, {}, 'TlsInspector');
    return null;
  },
  install(_config, listener) {
    listener.tlsInspector = true;
  },
};
