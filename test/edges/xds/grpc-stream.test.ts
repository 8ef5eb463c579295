/**
 * Root cause: the xDS stream's gRPC client kept grpc-js's default limit of 4 MiB on a received
 * message. A CDS push of a few thousand clusters passes it (Istio meshes send tens of MiB), so
 * such a push ended the stream with RESOURCE_EXHAUSTED, was never ACKed nor NACKed, and came
 * again after every backoff for ever: the proxy never got a discovered cluster. The
 * reference's `envoy_grpc` has no limit unless `max_receive_message_length` sets one; now
 * neither has the proxy's.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { JsonObject } from '../../../events/index.js';
import { type ProxyProcess, startProxyProcess } from '../../helpers/proxy-process.js';
import { ADMIN, adsConfig, staticCluster } from '../../helpers/xds-fixtures.js';
import { XdsServer } from '../../helpers/xds-server.js';

const ADS_V3 = { ads: {}, resource_api_version: 'V3' };

/** A STATIC cluster carrying 10 kB of metadata, as meshes attach labels and filter state. */
const cluster = (i: number): JsonObject => ({
  name: `svc-${i}`,
  connect_timeout: '1s',
  type: 'STATIC',
  load_assignment: {
    cluster_name: `svc-${i}`,
    endpoints: [
      {
        lb_endpoints: [
          { endpoint: { address: { socket_address: { address: '127.0.0.1', port_value: 1 } } } },
        ],
      },
    ],
  },
  metadata: { filter_metadata: { mesh: { labels: `${i}:${'x'.repeat(10_000)}` } } },
});

describe('a CDS response over 4 MiB', () => {
  let xds: XdsServer;
  let proxy: ProxyProcess;

  before(async () => {
    xds = await XdsServer.start();
    xds.set('cds', [], 'c0');
    proxy = await startProxyProcess(
      {
        admin: ADMIN,
        dynamic_resources: { cds_config: ADS_V3, ads_config: adsConfig('V3') },
        static_resources: { clusters: [staticCluster('xds_cluster', [xds.port], true)] },
      },
      ['--concurrency', '1'],
    );
    await xds.ack('cds', 'c0');
  });
  after(async () => {
    await proxy?.stop();
    await xds?.stop();
  });

  it('is received and ACKed on the same stream; every cluster is there', async () => {
    const clusters = Array.from({ length: 600 }, (_, i) => cluster(i));
    const bytes = JSON.stringify(clusters).length;
    assert.ok(bytes > 5 * 1024 * 1024, `${bytes} bytes`);
    const stream = (await xds.ack('cds', 'c0')).stream;
    xds.set('cds', clusters, 'big');
    const ack = await xds.ack('cds', 'big', 60_000);
    assert.equal(ack.stream, stream, 'the stream was not broken and redialled');
    const text = (await proxy.get('/clusters')).body;
    assert.equal(text.match(/^svc-\d+::added_via_api::true$/gm)?.length, 600);
    assert.doesNotMatch((await proxy.get('/stats?filter=^cluster_manager.cds')).body, /update_failure/);
  });
});

/**
 * `initial_metadata` of the ADS `GrpcService`: Consul's sidecars authenticate to their agent
 * with `x-consul-token`, Kuma's with `authorization`, as headers of the stream. Each stream
 * carries them, a redial after the server died too.
 */
describe('initial_metadata of the management server', () => {
  let xds: XdsServer;
  let proxy: ProxyProcess;

  before(async () => {
    xds = await XdsServer.start();
    xds.set('cds', [], 'c0');
    proxy = await startProxyProcess(
      {
        admin: ADMIN,
        dynamic_resources: {
          cds_config: ADS_V3,
          ads_config: {
            ...adsConfig('V3'),
            grpc_services: [
              {
                envoy_grpc: { cluster_name: 'xds_cluster' },
                initial_metadata: [
                  { key: 'x-consul-token', value: 'token-1' },
                  { key: 'Authorization', value: 'Bearer kuma' },
                  { key: 'x-empty', value: '' },
                ],
              },
            ],
          },
        },
        static_resources: { clusters: [staticCluster('xds_cluster', [xds.port], true)] },
      },
      ['--concurrency', '1'],
    );
  });
  after(async () => {
    await proxy?.stop();
    await xds?.stop();
  });

  it('goes with every stream, a redialled one too', async () => {
    const until = async (count: number) => {
      const deadline = Date.now() + 20_000;
      while (xds.streamHeaders.length < count && Date.now() < deadline)
        await new Promise((r) => setTimeout(r, 50));
      assert.ok(xds.streamHeaders.length >= count, `${xds.streamHeaders.length} streams`);
    };
    await until(1);
    const port = xds.port;
    await xds.stop();
    await xds.listen(port);
    await until(2);
    for (const headers of xds.streamHeaders) {
      assert.equal(headers['x-consul-token'], 'token-1');
      assert.equal(headers.authorization, 'Bearer kuma');
      assert.equal(headers['x-empty'], '');
    }
  });
});
