/**
 * The ratelimit filter in the real `proxy` command with two workers: one rate limit service
 * (a real gRPC server counting hits per descriptor, 3 allowed) limits requests whichever
 * worker takes them, and `/stats` sums both workers' counters.
 */
import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import type { JsonObject } from '../../../../../events/config.js';
import { helloUpstream, type Message, unaryServer } from '../../../../helpers/authz-servers.js';
import { cluster } from '../../../../helpers/dataplane.js';
import { send } from '../../../../helpers/http-send.js';
import { type ProxyProcess, startProxyProcess } from '../../../../helpers/proxy-process.js';

const ALLOWED = 3;

let upstream: Awaited<ReturnType<typeof helloUpstream>>;
let rls: Awaited<ReturnType<typeof unaryServer>>;
let proxy: ProxyProcess;

before(async () => {
  upstream = await helloUpstream();
  const hits = new Map<string, number>();
  rls = await unaryServer(
    ['/envoy.service.ratelimit.v2.RateLimitService/ShouldRateLimit'],
    'envoy.service.ratelimit.v2.RateLimitRequest',
    'envoy.service.ratelimit.v2.RateLimitResponse',
    (request: Message) => {
      const key = JSON.stringify(request.descriptors);
      const n = (hits.get(key) ?? 0) + 1;
      hits.set(key, n);
      return { overall_code: n > ALLOWED ? 'OVER_LIMIT' : 'OK' };
    },
  );
  const bootstrap: JsonObject = {
    static_resources: {
      listeners: [
        {
          name: 'ingress',
          address: { socket_address: { address: '127.0.0.1', port_value: 0 } },
          filter_chains: [
            {
              filters: [
                {
                  name: 'proxy.filters.network.http_connection_manager',
                  typed_config: {
                    '@type':
                      'type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager',
                    stat_prefix: 'ingress',
                    route_config: {
                      virtual_hosts: [
                        {
                          name: 'all',
                          domains: ['*'],
                          routes: [
                            {
                              match: { prefix: '/' },
                              route: {
                                cluster: 'backend',
                                rate_limits: [
                                  { actions: [{ generic_key: { descriptor_value: 'everyone' } }] },
                                ],
                              },
                            },
                          ],
                        },
                      ],
                    },
                    http_filters: [
                      {
                        name: 'envoy.rate_limit',
                        typed_config: {
                          '@type': 'type.googleapis.com/envoy.config.filter.http.rate_limit.v2.RateLimit',
                          domain: 'workers',
                          timeout: '10s',
                          rate_limit_service: { grpc_service: { envoy_grpc: { cluster_name: 'rls' } } },
                        },
                      },
                      { name: 'envoy.router' },
                    ],
                  },
                },
              ],
            },
          ],
        },
      ],
      clusters: [
        cluster('backend', [upstream.port]),
        cluster('rls', [rls.port], { http2_protocol_options: {} }),
      ],
    },
    admin: { address: { socket_address: { address: '127.0.0.1', port_value: 0 } } },
  };
  proxy = await startProxyProcess(bootstrap, ['--concurrency', '2'], 60_000);
});

after(async () => {
  await proxy?.stop();
  upstream?.close();
  rls?.close();
});

it('one service limits both workers together, and /stats sums their counts', async () => {
  const port = await proxy.listenerPort('ingress');
  const statuses: number[] = [];
  // A fresh connection each: the kernel spreads them over both workers' listeners.
  for (let i = 0; i < 10; i++) statuses.push((await send(port, 'GET', `/r${i}`)).status);
  assert.deepEqual(statuses, [200, 200, 200, 429, 429, 429, 429, 429, 429, 429]);
  assert.equal(rls.seen.length, 10);
  const stat = async (name: string) =>
    Number(
      /: (\d+)/.exec((await proxy.get(`/stats?filter=^${name.replaceAll('.', '\\.')}$`)).body)?.[1] ?? 0,
    );
  assert.equal(await stat('cluster.backend.ratelimit.ok'), ALLOWED);
  assert.equal(await stat('cluster.backend.ratelimit.over_limit'), 10 - ALLOWED);
});
