import type * as http2 from 'node:http2';

/**
 * The SETTINGS of every upstream HTTP/2 session (the pools' and the health checks'): what a
 * cluster configures, with server push off. node:http2 clients accept pushes by default, and
 * a pushed stream nobody reads stays open holding its data until the session ends, so an
 * upstream could make the proxy hold any number of them. The reference's client codec sends
 * `ENABLE_PUSH 0`, after which a PUSH_PROMISE is a connection error (RFC 9113 8.4).
 */
export function upstreamH2Settings(configured: http2.Settings = {}): http2.Settings {
  return { ...configured, enablePush: false };
}
