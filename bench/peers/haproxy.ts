/**
 * HAProxy configuration of the data-plane benchmark, the baseline of every ratio: one thread
 * (`threads` for the footprint part),
 * keep-alive both sides, idle upstream connections shared by every client (`http-reuse always`).
 */

/**
 * HTTP/1.1 on `port`, h2c (prior knowledge) on `h2Port`, all to the upstream, which is spoken
 * to in HTTP/2 (h2c) when `http2Upstream` (a gRPC server).
 */
export function haproxyConf(
  port: number,
  h2Port: number,
  upstreamPort: number,
  threads = 1,
  http2Upstream = false,
): string {
  return `global
  nbthread ${threads}
  # Stays under the usual 20,000 open-file limit HAProxy would otherwise try to raise.
  maxconn 4000

defaults
  mode http
  option http-keep-alive
  http-reuse always
  timeout connect 5s
  timeout client 60s
  timeout server 60s

frontend bench
  bind 127.0.0.1:${port}
  bind 127.0.0.1:${h2Port} proto h2
  default_backend upstream

backend upstream
  server upstream 127.0.0.1:${upstreamPort}${http2Upstream ? ' proto h2' : ''}
`;
}
