/**
 * `envoy.filters.network.sni_cluster` in the real process: TLS passes through the proxy
 * untouched (tls_inspector, no TLS context on the chain) to real TLS servers, each connection to
 * the cluster its ClientHello's SNI names; without SNI the TCP proxy's own cluster; an SNI naming
 * no cluster is closed and counted as the TCP proxy's no-route. With `--concurrency 2`.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import * as tls from 'node:tls';
import type { JsonObject } from '../../../../events/index.js';
import { cluster, SETTLE_MS, settleMatch } from '../../../helpers/dataplane.js';
import { type ProxyProcess, startProxyProcess } from '../../../helpers/proxy-process.js';
import { makePki, type TestPki } from '../../../tls/certs.js';

/** A TLS server for `name` that answers every connection with its name and closes. */
async function namedServer(pki: TestPki, name: string): Promise<{ port: number; server: tls.Server }> {
  const leaf = pki.leaf(name, [`DNS:${name}`]);
  const server = tls.createServer({ cert: leaf.certPem, key: leaf.keyPem }, (socket) => {
    socket.on('error', () => {});
    socket.end(`served by ${name}`);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { port: (server.address() as { port: number }).port, server };
}

/** A TLS connection through the proxy (SNI `servername`, none when undefined): what the server said. */
function through(port: number, pki: TestPki, servername: string | undefined): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = tls.connect({
      port,
      host: '127.0.0.1',
      ca: pki.ca.certPem,
      ...(servername ? { servername } : {}),
      checkServerIdentity: () => undefined,
    });
    const chunks: Buffer[] = [];
    socket.setTimeout(10_000, () => socket.destroy(new Error('timed out')));
    socket.on('data', (c: Buffer) => chunks.push(c));
    socket.on('error', reject);
    socket.on('close', () => resolve(Buffer.concat(chunks).toString()));
  });
}

describe('envoy.filters.network.sni_cluster', () => {
  let pki: TestPki;
  let servers: Array<{ port: number; server: tls.Server }>;
  let proxy: ProxyProcess;

  before(async () => {
    pki = makePki();
    servers = [await namedServer(pki, 'a.test'), await namedServer(pki, 'b.test')];
    const filters: JsonObject[] = [
      { name: 'envoy.filters.network.sni_cluster' },
      {
        name: 'envoy.tcp_proxy',
        typed_config: {
          '@type': 'type.googleapis.com/envoy.extensions.filters.network.tcp_proxy.v3.TcpProxy',
          stat_prefix: 'passthrough',
          cluster: 'a.test',
        },
      },
    ];
    proxy = await startProxyProcess(
      {
        admin: { address: { socket_address: { address: '127.0.0.1', port_value: 0 } } },
        static_resources: {
          clusters: [cluster('a.test', [servers[0]?.port ?? 0]), cluster('b.test', [servers[1]?.port ?? 0])],
          listeners: [
            {
              name: 'sni',
              address: { socket_address: { address: '127.0.0.1', port_value: 0 } },
              listener_filters: [{ name: 'envoy.filters.listener.tls_inspector' }],
              filter_chains: [{ filters }],
            },
          ],
        },
      },
      ['--concurrency', '2'],
    );
  });

  after(async () => {
    await proxy?.stop();
    for (const s of servers ?? []) s.server.close();
    pki?.remove();
  });

  it('sends each connection to the cluster its SNI names, and one without SNI to the proxy cluster', async () => {
    const port = await proxy.listenerPort('sni');
    assert.equal(await through(port, pki, 'b.test'), 'served by b.test');
    assert.equal(await through(port, pki, 'a.test'), 'served by a.test');
    assert.equal(await through(port, pki, undefined), 'served by a.test');
  });

  it('closes a connection whose SNI names no cluster, counted as no route', async () => {
    const port = await proxy.listenerPort('sni');
    await assert.rejects(through(port, pki, 'c.test'));
    const noRoute = /^tcp\.passthrough\.downstream_cx_no_route: 1$/m;
    const stats = async () => (await proxy.get('/stats')).body;
    assert.match(await settleMatch(stats, noRoute, SETTLE_MS), noRoute);
  });
});
