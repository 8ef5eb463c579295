/** Hop-by-hop headers a proxy never forwards (RFC 9110 7.6.1), in either direction and to authorizers. */
export const HOP_BY_HOP = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'transfer-encoding',
  'upgrade',
  'te',
  'trailer',
  'proxy-authenticate',
  'proxy-authorization',
  'http2-settings',
]);
