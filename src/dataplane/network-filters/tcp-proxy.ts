/** `envoy.filters.network.tcp_proxy`: the TCP proxy (../tcp/) as a network filter. */
import { compileTcpProxy, FIELD_TABLES, type TcpProxySettings } from '../tcp/config.js';
import { createTcpProxy } from '../tcp/proxy.js';
import type { TerminalFilterFactory } from './api.js';
import { TCP_PROXY } from './extensions.js';

export const tcpProxyFactory: TerminalFilterFactory<TcpProxySettings> = {
  ...TCP_PROXY,
  terminal: true,
  fieldTables: FIELD_TABLES,
  compile: compileTcpProxy,
  build: createTcpProxy,
};
