/**
 * Two listeners at one address. Root cause: nothing compared listener addresses, and every
 * listener binds with SO_REUSEPORT, so a second listener at a taken address bound beside the
 * first: a bootstrap with two passed `--mode validate`, and an LDS listener at a static
 * listener's address was ACKed, after which the kernel spread connections between the two
 * configs (one request answered by each in turn). The reference refuses it: "error adding
 * listener: '<name>' has duplicate address '<address>' as existing listener".
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { JsonObject } from '../../events/index.js';
import { freePort } from '../helpers/free-port.js';
import { errorsOf, loadYaml } from '../helpers/bootstrap.js';
import { GoControlPlane, skipGoControlPlane } from '../helpers/go-control-plane.js';
import { startProxyProcess } from '../helpers/proxy-process.js';
import { ADMIN, adsConfig, staticCluster, until } from '../helpers/xds-fixtures.js';

const ADS_V3 = { ads: {}, resource_api_version: 'V3' };

/** A v3 listener at 127.0.0.1:`port` answering every request with `body`. */
function answering(name: string, port: number, body: string): JsonObject {
  return {
    name,
    address: { socket_address: { address: '127.0.0.1', port_value: port } },
    filter_chains: [
      {
        filters: [
          {
            name: 'envoy.filters.network.http_connection_manager',
            typed_config: {
              '@type':
                'type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager',
              stat_prefix: name,
              route_config: {
                virtual_hosts: [
                  {
                    name: 'all',
                    domains: ['*'],
                    routes: [
                      {
                        match: { prefix: '/' },
                        direct_response: { status: 200, body: { inline_string: body } },
                      },
                    ],
                  },
                ],
              },
              http_filters: [
                {
                  name: 'envoy.filters.http.router',
                  typed_config: {
                    '@type': 'type.googleapis.com/envoy.extensions.filters.http.router.v3.Router',
                  },
                },
              ],
            },
          },
        ],
      },
    ],
  };
}

async function bodies(port: number, n: number): Promise<string[]> {
  const out: string[] = [];
  for (let i = 0; i < n; i++) {
    const res = await fetch(`http://127.0.0.1:${port}/`, { signal: AbortSignal.timeout(10_000) });
    out.push(await res.text());
  }
  return out;
}

describe('listeners at one address', () => {
  it('two static listeners at one address are refused naming the second', () => {
    const l = (name: string, port: number) =>
      `{ name: ${name}, address: { socket_address: { address: 127.0.0.1, port_value: ${port} } }, filter_chains: [{ filters: [{ name: envoy.filters.network.tcp_proxy, typed_config: { "@type": type.googleapis.com/envoy.extensions.filters.network.tcp_proxy.v3.TcpProxy, stat_prefix: t, cluster: c } }] }] }`;
    const cluster =
      '{ name: c, type: STATIC, connect_timeout: 1s, load_assignment: { cluster_name: c, endpoints: [{ lb_endpoints: [{ endpoint: { address: { socket_address: { address: 127.0.0.1, port_value: 9 } } } }] }] } }';
    assert.deepEqual(
      errorsOf(
        loadYaml(
          `static_resources: { listeners: [${l('a', 19930)}, ${l('z', 0)}, ${l('b', 19930)}], clusters: [${cluster}] }`,
        ),
      ),
      [
        "--config-yaml: static_resources.listeners[2].address: listener 'b' has duplicate address '127.0.0.1:19930' as existing listener 'a'",
      ],
    );
    // Port 0 binds a port of its own: never a duplicate.
    assert.equal(
      loadYaml(`static_resources: { listeners: [${l('a', 0)}, ${l('b', 0)}], clusters: [${cluster}] }`).ok,
      true,
    );
  });

  it("LDS (go-control-plane, --concurrency 2): a static listener's address or one listed twice is NACKed; a swap is taken", {
    skip: skipGoControlPlane,
    timeout: 120_000,
  }, async () => {
    const [p1, p2] = [await freePort(), await freePort()];
    let version = 0;
    const snapshot = (listeners: JsonObject[]) => ({ node_id: 'n', version: String(++version), listeners });
    const cp = await GoControlPlane.start(snapshot([answering('dyn', p1, 'dyn')]));
    const proxy = await startProxyProcess(
      {
        node: { id: 'n', cluster: 'c' },
        admin: ADMIN,
        dynamic_resources: { ads_config: adsConfig('V3'), lds_config: ADS_V3 },
        static_resources: {
          listeners: [answering('static', p1, 'static')],
          clusters: [staticCluster('xds_cluster', [cp.port], true)],
        },
      },
      ['--concurrency', '2'],
    );
    try {
      const nack = await cp.waitFor((l) => l.event === 'request' && l.error_detail === true, 30_000);
      assert.ok(nack);
      assert.deepEqual(await bodies(p1, 8), Array(8).fill('static'));
      const events = (await proxy.get('/events?format=json')).body;
      assert.match(
        events,
        /listener 'dyn' has duplicate address '127\.0\.0\.1:\d+' as existing listener 'static'/,
      );
      // Two of the response at one address: the second refused.
      cp.set(snapshot([answering('a', p2, 'a'), answering('b', p2, 'b')]));
      await until(
        'the second of one address refused',
        async () =>
          /listener 'b' has duplicate address '127\.0\.0\.1:\d+' as existing listener 'a'/.test(
            (await proxy.get('/events?format=json')).body,
          ),
        30_000,
      );
      // A swap in one response is taken: judged on the listeners as they will be.
      const [p3, p4] = [await freePort(), await freePort()];
      cp.set(snapshot([answering('a', p3, 'a'), answering('b', p4, 'b')]));
      await cp.ack('Listener', String(version), 30_000);
      cp.set(snapshot([answering('a', p4, 'a'), answering('b', p3, 'b')]));
      await cp.ack('Listener', String(version), 30_000);
      assert.deepEqual([...(await bodies(p3, 2)), ...(await bodies(p4, 2))], ['b', 'b', 'a', 'a']);
    } finally {
      await proxy.stop();
      await cp.stop();
    }
  });
});
