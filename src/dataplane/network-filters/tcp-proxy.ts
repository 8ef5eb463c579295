/** `envoy.filters.network.tcp_proxy`: the TCP proxy (../tcp/) as a network filter. */
import { compileTcpProxy, FIELD_TABLES, type TcpProxySettings } from '../tcp/config.js';
import { createTcpProxy } from '../tcp/proxy.js';
import type { TerminalFilterFactory } from './api.js';

const V2 = 'envoy.config.filter.network.tcp_proxy.v2.TcpProxy';

export const tcpProxyFactory: TerminalFilterFactory<TcpProxySettings> = {
  name: 'envoy.filters.network.tcp_proxy',
  aliases: ['envoy.tcp_proxy'],
  configType: V2,
  typeAliases: { 'envoy.extensions.filters.network.tcp_proxy.v3.TcpProxy': V2 },
  schema: { file: 'envoy/config/filter/network/tcp_proxy/v2.proto' },
  terminal: true,
  fieldTables: FIELD_TABLES,
  compile: compileTcpProxy,
  build: createTcpProxy,
};
