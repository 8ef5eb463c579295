/**
 * nginx configurations of the data-plane benchmark: the upstream every proxy forwards to
 * (one worker, a small fixed body) and nginx as a reverse proxy (one worker, upstream
 * keep-alive). Everything nginx writes goes under the prefix folder, so it runs unprivileged
 * with `nginx -p <prefix> -c <conf> -g 'daemon off;'`.
 */

/** The fixed body the upstream answers every request with. */
export const UPSTREAM_BODY = 'hello from the upstream\n';

function main(servers: string): string {
  return `worker_processes 1;
error_log logs/error.log warn;
pid logs/nginx.pid;
events { worker_connections 4096; }
http {
  access_log off;
  client_body_temp_path tmp/body;
  proxy_temp_path tmp/proxy;
  fastcgi_temp_path tmp/fastcgi;
  uwsgi_temp_path tmp/uwsgi;
  scgi_temp_path tmp/scgi;
  # The default (1000) closes every client connection after 1000 requests; no other peer does.
  keepalive_requests 1000000;
  keepalive_timeout 60s;
${servers}
}
`;
}

/** The upstream: `GET <anything>` answers 200 with `UPSTREAM_BODY`; h2c (prior knowledge) with `http2`. */
export function upstreamConf(port: number, http2 = false): string {
  return main(`  server {
    listen 127.0.0.1:${port}${http2 ? ' http2' : ''} reuseport backlog=4096;
    location / {
      default_type text/plain;
      return 200 ${JSON.stringify(UPSTREAM_BODY)};
    }
  }`);
}

/** nginx as reverse proxy: HTTP/1.1 on `port`, h2c (prior knowledge) on `h2Port`, to the upstream. */
export function reverseProxyConf(port: number, h2Port: number, upstreamPort: number): string {
  return main(`  upstream backend {
    server 127.0.0.1:${upstreamPort};
    keepalive 64;
    keepalive_requests 1000000;
  }
  server {
    listen 127.0.0.1:${port} backlog=4096;
    listen 127.0.0.1:${h2Port} http2;
    location / {
      proxy_pass http://backend;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
    }
  }`);
}
