/** What the Lua filter tests share: an upstream that echoes what it saw, a bootstrap around a filter list. */
import * as http from 'node:http';
import * as http2 from 'node:http2';
import type { AddressInfo } from 'node:net';
import type { Json, JsonObject } from '../../../../../events/index.js';

/** An upstream that echoes the request headers it saw as JSON, like the example's web service. */
export async function echoUpstream(): Promise<{ server: http.Server; port: number }> {
  const server = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      res.setHeader('content-type', 'application/json');
      res.setHeader('x-upstream', 'one');
      res.end(JSON.stringify({ path: req.url, method: req.method, headers: req.headers }));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { server, port: (server.address() as AddressInfo).port };
}

/** A listener whose HCM runs `filters` then the router to the echo upstream. */
export function bootstrapWith(filters: Json[], routes: Json[], upstreamPort: number, h2Port = 1): JsonObject {
  return {
    admin: { address: { socket_address: { address: '127.0.0.1', port_value: 0 } } },
    static_resources: {
      listeners: [
        {
          name: 'lua',
          address: { socket_address: { address: '127.0.0.1', port_value: 0 } },
          filter_chains: [
            {
              filters: [
                {
                  name: 'proxy.http_connection_manager',
                  typed_config: {
                    '@type':
                      'type.googleapis.com/envoy.config.filter.network.http_connection_manager.v2.HttpConnectionManager',
                    stat_prefix: 'lua',
                    route_config: { virtual_hosts: [{ name: 'all', domains: ['*'], routes }] },
                    http_filters: [...filters, { name: 'envoy.router' }],
                  },
                },
              ],
            },
          ],
        },
      ],
      clusters: [
        cluster('web', upstreamPort),
        // Nothing listens on port 1: a call there fails.
        cluster('dead', 1),
        { ...cluster('h2', h2Port), http2_protocol_options: {} },
      ],
    },
  };
}

function cluster(name: string, port: number): JsonObject {
  return {
    name,
    connect_timeout: '1s',
    load_assignment: {
      cluster_name: name,
      endpoints: [
        {
          lb_endpoints: [
            { endpoint: { address: { socket_address: { address: '127.0.0.1', port_value: port } } } },
          ],
        },
      ],
    },
  };
}

/** An HTTP/2 upstream whose answers end with a trailer (this build reads trailers from HTTP/2 peers). */
export async function trailersUpstream(): Promise<{ server: http2.Http2Server; port: number }> {
  const server = http2.createServer();
  server.on('stream', (stream) => {
    stream.respond({ ':status': 200, 'content-type': 'text/plain' }, { waitForTrailers: true });
    stream.on('wantTrailers', () => stream.sendTrailers({ 'x-upstream-trailer': 'from-upstream' }));
    stream.end('with trailers');
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { server, port: (server.address() as AddressInfo).port };
}
