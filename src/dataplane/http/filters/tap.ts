import { compileTapFilter, TAP_FIELD_TABLES, TapRecorder } from '../tap.js';
import type { HttpFilterFactory } from './api.js';

/**
 * The tap filter: its admin config id, which `POST /tap` attaches sessions to. It records at
 * its place in the chain, and only while a session is attached: without one it sits each
 * request out. A connection manager carrying it registers the id in the process's tap registry
 * (so `/tap` knows it) for as long as it lives.
 */
export const tapFactory: HttpFilterFactory<string | null> = {
  name: 'envoy.filters.http.tap',
  configType: 'envoy.config.filter.http.tap.v2alpha.Tap',
  typeAliases: { 'envoy.extensions.filters.http.tap.v3.Tap': 'envoy.config.filter.http.tap.v2alpha.Tap' },
  schema: { file: 'envoy/config/filter/http/tap/v2alpha.proto' },
  fieldTables: TAP_FIELD_TABLES,
  compile: compileTapFilter,
  start(configId, ctx) {
    // A refused config (static_config) never serves: the compile step reported it.
    const id = configId ?? '';
    const taps = ctx.taps;
    taps.addFilter(id);
    ctx.onClose(() => taps.removeFilter(id));
    return () => {
      const session = taps.sessions.get(id);
      return session === undefined ? null : new TapRecorder(session);
    };
  },
};
