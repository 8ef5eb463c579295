/**
 * `envoy.filters.listener.original_dst`: the listener restores each connection's original
 * destination (../original-dst.ts, through the native socket helper) before it picks a chain.
 */
import { checkFields } from '../../../bootstrap/honoured.js';
import type { ListenerFilterFactory } from './api.js';

const ORIGINAL_DST_V2 = 'envoy.config.filter.listener.original_dst.v2.OriginalDst';

export const originalDstFactory: ListenerFilterFactory<null> = {
  name: 'envoy.filters.listener.original_dst',
  aliases: ['envoy.listener.original_dst'],
  configType: ORIGINAL_DST_V2,
  typeAliases: { 'envoy.extensions.filters.listener.original_dst.v3.OriginalDst': ORIGINAL_DST_V2 },
  schema: { file: 'envoy/config/filter/listener/original_dst/v2.proto' },
  fieldTables: { OriginalDst: {} },
  compile(config, path, report) {
    checkFields(config, path, report, {}, 'OriginalDst');
    return null;
  },
  install(_config, listener, at) {
    listener.originalDst = true;
    listener.originalDstAt ||= at;
  },
};
