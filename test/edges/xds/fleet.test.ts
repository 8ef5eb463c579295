/**
 * Several data-plane processes on one management server: three proxies converge on one
 * endpoint update, and with --concurrency 2 a discovered listener is served by every worker
 * and closed by every worker when discovery removes it.
 */
import assert from 'node:assert/strict';
import * as net from 'node:net';
import { describe, it } from 'node:test';
import { type ProxyProcess, startProxyProcess } from '../../helpers/proxy-process.js';
import {
  ADMIN,
  assignment,
  edsBootstrap,
  GRPC_SOURCE,
  get,
  httpListener,
  staticCluster,
  until,
  upstream,
} from '../../helpers/xds-fixtures.js';
import { XdsServer } from '../../helpers/xds-server.js';

describe('a fleet on one management server', () => {
  it('three proxies converge on one endpoint update', async () => {
    const xds = await XdsServer.start();
    const a = await upstream('a');
    const b = await upstream('b');
    xds.set('eds', [assignment('some_service', [a.port])], 'v1');
    const proxies: ProxyProcess[] = [];
    try {
      for (let i = 0; i < 3; i++)
        proxies.push(await startProxyProcess(edsBootstrap(xds.port, GRPC_SOURCE), ['--concurrency', '1']));
      const ports = await Promise.all(proxies.map((p) => p.listenerPort('listener_0')));
      for (const port of ports) assert.equal((await get(port)).body, 'a');
      xds.set('eds', [assignment('some_service', [b.port])], 'v2');
      await until('every proxy ACKed v2', async () => {
        const acked = new Set(
          xds.requests
            .filter((r) => r.answers && r.version_info === 'v2' && !r.error_detail)
            .map((r) => r.stream),
        );
        return acked.size === 3;
      });
      for (const port of ports)
        await until(`proxy on ${port} serves b`, async () => (await get(port)).body === 'b');
    } finally {
      for (const p of proxies) await p.stop();
      await xds.stop();
      await a.close();
      await b.close();
    }
  });

  it('with --concurrency 2 every worker serves a discovered listener, and all close it when it is removed', async () => {
    const xds = await XdsServer.start();
    const a = await upstream('a');
    xds.set('lds', [httpListener('front', 'local')], 'l1');
    const proxy = await startProxyProcess(
      {
        admin: ADMIN,
        dynamic_resources: { lds_config: GRPC_SOURCE },
        static_resources: {
          clusters: [staticCluster('xds_cluster', [xds.port], true), staticCluster('local', [a.port])],
        },
      },
      ['--concurrency', '2', '--drain-time-s', '1'],
    );
    try {
      await xds.ack('lds', 'l1');
      const port = await proxy.listenerPort('front');
      for (let i = 0; i < 10; i++) {
        const res = await fetch(`http://127.0.0.1:${port}/`, { headers: { connection: 'close' } });
        assert.equal(await res.text(), 'a');
      }
      xds.set('lds', [], 'l2');
      await xds.ack('lds', 'l2');
      await until('the port closed in every worker', async () => {
        const refused = await Promise.all(
          Array.from(
            { length: 6 },
            () =>
              new Promise<boolean>((resolve) => {
                const socket = net.connect(port, '127.0.0.1');
                socket.once('connect', () => {
                  socket.destroy();
                  resolve(false);
                });
                socket.once('error', () => resolve(true));
              }),
          ),
        );
        return refused.every(Boolean);
      });
    } finally {
      await proxy.stop();
      await xds.stop();
      await a.close();
    }
  });
});
