/**
 * Root cause: the xDS stream's gRPC client kept grpc-js's default limit of 4 MiB on a received
 * message. A CDS push of a few thousand clusters passes it (Istio meshes send tens of MiB), so
 * such a push ended the stream with RESOURCE_EXHAUSTED, was never ACKed nor NACKed, and came
 * again after every backoff for ever: the proxy never got a discovered cluster. The
 * reference's `envoy_grpc` has no limit unless `max_receive_message_length` sets one; now
 * neither has the proxy's.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import * as net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { JsonObject } from '../../../events/index.js';
import { type ProxyProcess, startProxyProcess } from '../../helpers/proxy-process.js';
import {
  ADMIN,
  adsConfig,
  assignment,
  cdsOverAds,
  edsBootstrap,
  GRPC_SOURCE,
  get,
  staticCluster,
  statValue,
  until,
  upstream,
} from '../../helpers/xds-fixtures.js';
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
    proxy = await startProxyProcess(cdsOverAds(xds.port), ['--concurrency', '1']);
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

/**
 * Root cause: grpc-js takes a dial as connected only once the server's HTTP/2 SETTINGS arrive,
 * and waits for them without a deadline. A management server (or a load balancer in front of
 * one) that accepts the TCP connection and says nothing held the xDS stream for ever: one
 * connection for the life of the process, no redial, no `update_failure`, and the real server
 * behind the same address was never reached once it answered. Now a dial not connected within
 * gRPC's MIN_CONNECT_TIMEOUT (20 s) is a failed fetch, and the stream redials with backoff.
 */
describe('a management server that accepts and never sends SETTINGS', () => {
  it('is left after 20 s and redialled; once a real server listens there, EDS arrives', async () => {
    const sockets = new Set<net.Socket>();
    let accepted = 0;
    const hole = net.createServer((socket) => {
      accepted++;
      sockets.add(socket);
      socket.resume();
      socket.on('close', () => sockets.delete(socket));
    });
    await new Promise<void>((resolve) => hole.listen(0, '127.0.0.1', resolve));
    const port = (hole.address() as net.AddressInfo).port;
    const origin = await upstream('real');
    let xds: XdsServer | null = null;
    // initial_fetch_timeout 15 s lets the proxy go LIVE while the first dial waits.
    const proxy = await startProxyProcess(edsBootstrap(port, GRPC_SOURCE), ['--concurrency', '2']);
    try {
      assert.equal(accepted, 1);
      await until('a second dial', async () => accepted >= 2, 40_000);
      // The dial left behind is closed, not kept beside the new one.
      await until('the first connection closed', async () => sockets.size <= 1, 10_000);
      assert.ok(((await statValue(proxy, 'cluster.some_service.update_failure')) ?? 0) >= 1);
      assert.match(proxy.stderr(), /no HTTP\/2 SETTINGS from 127\.0\.0\.1:\d+ within 20000 ms/);
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => hole.close(() => resolve()));
      xds = await XdsServer.start(port);
      xds.set('eds', [assignment('some_service', [origin.port])], 'e1');
      await xds.ack('eds', 'e1', 60_000);
      const listener = await proxy.listenerPort('listener_0');
      await until('the discovered host answers', async () => (await get(listener)).body === 'real', 10_000);
    } finally {
      await proxy.stop();
      await xds?.stop();
      hole.close();
      await origin.close();
    }
  });
});

/**
 * A management cluster whose member is a unix socket (`pipe`): Istio's sidecar reaches its
 * agent's xDS server over `/etc/istio/proxy/XDS`. The stream dials the socket by its path.
 */
describe('a management server on a unix socket', () => {
  let xds: XdsServer;
  let proxy: ProxyProcess;
  let dir: string;

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'xds-uds-'));
    xds = await XdsServer.startUnix(join(dir, 'XDS'));
    xds.set('cds', [cluster(1)], 'c1');
    proxy = await startProxyProcess(
      {
        admin: ADMIN,
        dynamic_resources: { cds_config: ADS_V3, ads_config: adsConfig('V3') },
        static_resources: {
          clusters: [
            {
              name: 'xds_cluster',
              connect_timeout: '1s',
              type: 'STATIC',
              http2_protocol_options: {},
              load_assignment: {
                cluster_name: 'xds_cluster',
                endpoints: [
                  { lb_endpoints: [{ endpoint: { address: { pipe: { path: join(dir, 'XDS') } } } }] },
                ],
              },
            },
          ],
        },
      },
      ['--concurrency', '1'],
    );
  });
  after(async () => {
    await proxy?.stop();
    await xds?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('streams over it: the discovered cluster arrives and is ACKed', async () => {
    await xds.ack('cds', 'c1');
    assert.match((await proxy.get('/clusters')).body, /^svc-1::added_via_api::true$/m);
    assert.match((await proxy.get('/stats?filter=control_plane.connected_state')).body, /: 1$/m);
  });
});
