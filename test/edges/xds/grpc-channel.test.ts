/**
 * HTTP/2 `connection_keepalive` on the management cluster (Envoy Gateway's `xds_cluster` sets
 * it): the xDS channel PINGs the real go-control-plane server at the interval, seen by a relay
 * that reads the frames on their way; when the relay swallows them (a dead path that keeps the
 * TCP connection), the channel gives up after the timeout and the stream fails and redials.
 */
import assert from 'node:assert/strict';
import * as net from 'node:net';
import { after, before, describe, it } from 'node:test';
import type { JsonObject } from '../../../events/index.js';
import { GoControlPlane, skipGoControlPlane } from '../../helpers/go-control-plane.js';
import { type ProxyProcess, startProxyProcess } from '../../helpers/proxy-process.js';
import { ADMIN, staticCluster, statValue, until } from '../../helpers/xds-fixtures.js';

const PREFACE_LENGTH = 24;

/** A TCP relay to `port` counting the client's PINGs, forwarding them or (`swallow`) not. */
async function pingRelay(port: number, swallow: boolean) {
  const seen = { pings: 0 };
  const sockets = new Set<net.Socket>();
  const server = net.createServer((client) => {
    const upstream = net.connect(port, '127.0.0.1');
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on('error', () => {});
      s.on('close', () => {
        client.destroy();
        upstream.destroy();
      });
    }
    upstream.pipe(client);
    let pending = Buffer.alloc(0);
    let preface = PREFACE_LENGTH;
    client.on('data', (chunk: Buffer) => {
      pending = Buffer.concat([pending, chunk]);
      const out: Buffer[] = [];
      if (preface > 0) {
        const n = Math.min(preface, pending.length);
        out.push(pending.subarray(0, n));
        pending = pending.subarray(n);
        preface -= n;
      }
      while (preface === 0 && pending.length >= 9) {
        const length = pending.readUIntBE(0, 3);
        if (pending.length < 9 + length) break;
        const frame = pending.subarray(0, 9 + length);
        pending = pending.subarray(9 + length);
        // PING (type 6) without ACK (flag 1).
        const ping = frame[3] === 6 && ((frame[4] ?? 0) & 1) === 0;
        if (ping) seen.pings += 1;
        if (!(ping && swallow)) out.push(frame);
      }
      if (out.length > 0) upstream.write(Buffer.concat(out));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as net.AddressInfo).port,
    seen,
    close() {
      server.close();
      for (const s of sockets) s.destroy();
    },
  };
}

const bootstrap = (port: number): JsonObject => ({
  node: { id: 'test-node', cluster: 'test' },
  admin: ADMIN,
  dynamic_resources: {
    ads_config: {
      api_type: 'GRPC',
      transport_api_version: 'V3',
      grpc_services: [{ envoy_grpc: { cluster_name: 'xds_cluster' } }],
    },
    cds_config: { ads: {}, resource_api_version: 'V3', initial_fetch_timeout: '60s' },
  },
  static_resources: {
    clusters: [
      {
        ...staticCluster('xds_cluster', [port]),
        connect_timeout: '5s',
        typed_extension_protocol_options: {
          'envoy.extensions.upstreams.http.v3.HttpProtocolOptions': {
            '@type': 'type.googleapis.com/envoy.extensions.upstreams.http.v3.HttpProtocolOptions',
            explicit_http_config: {
              http2_protocol_options: { connection_keepalive: { interval: '1s', timeout: '1s' } },
            },
          },
        },
      },
    ],
  },
});

describe('connection_keepalive on the management cluster', {
  skip: skipGoControlPlane,
  timeout: 120_000,
}, () => {
  let server: GoControlPlane;
  const stops: Array<() => unknown> = [];
  before(async () => {
    server = await GoControlPlane.start(
      { node_id: 'test-node', version: '1', clusters: [staticCluster('web', [9])] },
      ['-any-node'],
    );
  });
  after(async () => {
    for (const stop of stops.reverse()) await stop();
    await server?.stop();
  });

  const start = async (swallow: boolean) => {
    const relay = await pingRelay(server.port, swallow);
    stops.push(() => relay.close());
    const proxy: ProxyProcess = await startProxyProcess(
      bootstrap(relay.port),
      ['--concurrency', '1'],
      60_000,
      {},
      [],
      swallow ? 'admin' : 'live',
    );
    stops.push(() => proxy.stop());
    return { relay, proxy };
  };

  it('PINGs the management server at the interval over the stream it holds', async () => {
    const { relay, proxy } = await start(false);
    await until('the discovered cluster', async () => (await proxy.get('/clusters')).body.includes('web::'));
    await until('two PINGs', async () => relay.seen.pings >= 2, 20_000);
    assert.equal(await statValue(proxy, 'control_plane.connected_state'), 1);
  });

  it('drops a connection whose PINGs go unanswered after the timeout: the stream fails and redials', async () => {
    const { relay, proxy } = await start(true);
    await until(
      'a failed fetch',
      async () => ((await statValue(proxy, 'cluster_manager.cds.update_failure')) ?? 0) >= 1,
      30_000,
    );
    assert.ok(relay.seen.pings >= 1);
    await until('the failure in the log', async () => /xDS stream to .* closed: 14: /.test(proxy.stderr()));
  });
});
