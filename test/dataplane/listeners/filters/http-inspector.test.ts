/**
 * `envoy.filters.listener.http_inspector` in the real process (`--concurrency 2`), with the
 * chains a mesh sidecar's inbound listener has: plain-text HTTP/1.1 and h2c (application
 * protocols `http/1.1`, `h2c`) reach the HTTP connection manager, anything else the TCP proxy
 * chain. Real clients: node's HTTP/1.1 and HTTP/2 (prior knowledge) clients, and a raw socket.
 */
import assert from 'node:assert/strict';
import * as http from 'node:http';
import * as http2 from 'node:http2';
import { after, before, describe, it } from 'node:test';
import { hcmFilterV3 } from '../../../helpers/bootstraps.js';
import { cluster, exchange, SETTLE_MS, settleMatch, tcpServer } from '../../../helpers/dataplane.js';
import { answeringRoutes } from '../../../helpers/http-dataplane.js';
import { type ProxyProcess, startProxyProcess } from '../../../helpers/proxy-process.js';

function get(port: number): Promise<string> {
  return new Promise((resolve, reject) => {
    http
      .get({ port, host: '127.0.0.1', path: '/' }, (res) => {
        let body = '';
        res.on('data', (c: Buffer) => (body += c));
        res.on('end', () => resolve(body));
      })
      .on('error', reject);
  });
}

function h2cGet(port: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const session = http2.connect(`http://127.0.0.1:${port}`);
    session.on('error', reject);
    const stream = session.request({ ':path': '/' });
    let body = '';
    stream.on('data', (c: Buffer) => (body += c));
    stream.on('end', () => {
      session.close();
      resolve(body);
    });
    stream.on('error', reject);
  });
}

describe('envoy.filters.listener.http_inspector', () => {
  let upstream: Awaited<ReturnType<typeof tcpServer>>;
  let proxy: ProxyProcess;

  before(async () => {
    upstream = await tcpServer((socket) => {
      const chunks: Buffer[] = [];
      socket.on('data', (c: Buffer) => chunks.push(c));
      socket.on('end', () => socket.end(Buffer.concat([Buffer.from('echo:'), ...chunks])));
    });
    proxy = await startProxyProcess(
      {
        admin: { address: { socket_address: { address: '127.0.0.1', port_value: 0 } } },
        static_resources: {
          clusters: [cluster('echo', [upstream.port])],
          listeners: [
            {
              name: 'inbound',
              address: { socket_address: { address: '127.0.0.1', port_value: 0 } },
              listener_filters: [
                { name: 'envoy.filters.listener.tls_inspector' },
                {
                  name: 'envoy.filters.listener.http_inspector',
                  typed_config: {
                    '@type':
                      'type.googleapis.com/envoy.extensions.filters.listener.http_inspector.v3.HttpInspector',
                  },
                },
              ],
              filter_chains: [
                {
                  filter_chain_match: {
                    transport_protocol: 'raw_buffer',
                    application_protocols: ['http/1.1', 'h2c'],
                  },
                  filters: [
                    hcmFilterV3('inbound_http', {
                      route_config: answeringRoutes('by the HTTP chain'),
                      http_filters: [{ name: 'envoy.filters.http.router' }],
                    }),
                  ],
                },
                {
                  filter_chain_match: { transport_protocol: 'raw_buffer' },
                  filters: [
                    {
                      name: 'envoy.filters.network.tcp_proxy',
                      typed_config: {
                        '@type': 'type.googleapis.com/envoy.extensions.filters.network.tcp_proxy.v3.TcpProxy',
                        stat_prefix: 'inbound_tcp',
                        cluster: 'echo',
                      },
                    },
                  ],
                },
              ],
            },
          ],
        },
      },
      ['--concurrency', '2'],
    );
  });

  after(async () => {
    await proxy?.stop();
    await upstream?.close();
  });

  it('sends HTTP/1.1 and h2c to the chain matching their application protocols', async () => {
    const port = await proxy.listenerPort('inbound');
    assert.equal(await get(port), 'by the HTTP chain');
    assert.equal(await h2cGet(port), 'by the HTTP chain');
  });

  it('sends other plain text, and HTTP/1.0, to the TCP proxy chain', async () => {
    const port = await proxy.listenerPort('inbound');
    assert.equal((await exchange(port, 'hello\r\n')).data.toString(), 'echo:hello\r\n');
    const old = 'GET / HTTP/1.0\r\n\r\n';
    assert.equal((await exchange(port, old)).data.toString(), `echo:${old}`);
    const both = /^tcp\.inbound_tcp\.downstream_cx_total: 2$/m;
    const stats = async () => (await proxy.get('/stats')).body;
    assert.match(await settleMatch(stats, both, SETTLE_MS), both);
  });
});
