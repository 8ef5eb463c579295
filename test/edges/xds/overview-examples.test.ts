/**
 * The reference's documentation examples "Mostly static with dynamic EDS" and "Dynamic"
 * (fixtures/real-world, pasted unchanged) serve traffic against the test management server,
 * with only their ports rewritten: admin and static listeners to free ports, the
 * management cluster's member to the server.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { JsonObject } from '../../../events/index.js';
import { type Dump, read, root } from '../../helpers/bootstrap.js';
import { type ProxyProcess, startProxyProcess } from '../../helpers/proxy-process.js';
import { onFreePorts } from '../../helpers/serves.js';
import { assignment, get, type Upstream, upstream } from '../../helpers/xds-fixtures.js';
import { XdsServer } from '../../helpers/xds-server.js';

/** The example bootstrap with its ports rewritten, the management cluster pointing at `xdsPort`. */
function example(file: string, xdsPort: number): Dump {
  const loaded = read({ configPath: join(root, 'fixtures/real-world', file) });
  assert.ok(loaded.ok, file);
  const bootstrap = onFreePorts(loaded.bootstrap as Dump);
  const xds = (bootstrap.static_resources.clusters as Dump[]).find((c) => c.name === 'xds_cluster')!;
  xds.load_assignment.endpoints[0].lb_endpoints[0].endpoint.address.socket_address.port_value = xdsPort;
  return bootstrap;
}

/** The management cluster as the examples name it, on a per-type gRPC service. */
const XDS_SOURCE = {
  api_config_source: { api_type: 'GRPC', grpc_services: { envoy_grpc: { cluster_name: 'xds_cluster' } } },
};

describe("the reference's overview examples against a management server", () => {
  let xds: XdsServer;
  let service: Upstream;
  const proxies: ProxyProcess[] = [];

  before(async () => {
    xds = await XdsServer.start();
    service = await upstream('some_service');
    xds.set('eds', [assignment('some_service', [service.port])], '1');
  });

  after(async () => {
    for (const p of proxies) await p.stop();
    await xds?.stop();
    await service?.close();
  });

  it('"Mostly static with dynamic EDS" serves through its discovered endpoints', async () => {
    const proxy = await startProxyProcess(example('v2-overview-mostly-static-eds.yaml', xds.port), [
      '--concurrency',
      '1',
    ]);
    proxies.push(proxy);
    const res = await get(await proxy.listenerPort('listener_0'));
    assert.deepEqual(res, { status: 200, body: 'some_service' });
  });

  it('"Dynamic" serves a listener, route table, cluster and endpoints all discovered', async () => {
    // The resources of the example's management server, as the documentation lists them.
    const hcm: JsonObject = {
      '@type':
        'type.googleapis.com/envoy.config.filter.network.http_connection_manager.v2.HttpConnectionManager',
      stat_prefix: 'ingress_http',
      codec_type: 'AUTO',
      rds: { route_config_name: 'local_route', config_source: XDS_SOURCE },
      http_filters: [{ name: 'envoy.router' }],
    };
    xds.set(
      'lds',
      [
        {
          name: 'listener_0',
          address: { socket_address: { address: '127.0.0.1', port_value: 0 } },
          filter_chains: [{ filters: [{ name: 'envoy.http_connection_manager', typed_config: hcm }] }],
        },
      ],
      '1',
    );
    xds.set(
      'rds',
      [
        {
          name: 'local_route',
          virtual_hosts: [
            {
              name: 'local_service',
              domains: ['*'],
              routes: [{ match: { prefix: '/' }, route: { cluster: 'some_service' } }],
            },
          ],
        },
      ],
      '1',
    );
    xds.set(
      'cds',
      [
        {
          name: 'some_service',
          connect_timeout: '0.25s',
          lb_policy: 'ROUND_ROBIN',
          type: 'EDS',
          eds_cluster_config: { eds_config: XDS_SOURCE },
        },
      ],
      '1',
    );
    const proxy = await startProxyProcess(example('v2-overview-dynamic.yaml', xds.port), [
      '--concurrency',
      '1',
    ]);
    proxies.push(proxy);
    const res = await get(await proxy.listenerPort('listener_0'));
    assert.deepEqual(res, { status: 200, body: 'some_service' });
    assert.match((await proxy.get('/clusters')).body, /^some_service::added_via_api::true$/m);
  });
});
