import { compileTapFilter, TAP_FIELD_TABLES } from '../tap.js';
import type { HttpFilterFactory } from './api.js';

/** The tap filter: its admin config id, which `POST /tap` attaches sessions to. */
export const tapFactory: HttpFilterFactory<string | null> = {
  name: 'envoy.filters.http.tap',
  configType: 'envoy.config.filter.http.tap.v2alpha.Tap',
  typeAliases: { 'envoy.extensions.filters.http.tap.v3.Tap': 'envoy.config.filter.http.tap.v2alpha.Tap' },
  schema: { file: 'envoy/config/filter/http/tap/v2alpha.proto' },
  fieldTables: TAP_FIELD_TABLES,
  compile: compileTapFilter,
  install(chain, configId, path, report) {
    // One tap per chain: a request records into one session.
    if (chain.tapConfigId !== null) report.unsupported(path, 'a second tap filter in one chain');
    else chain.tapConfigId = configId;
  },
};
