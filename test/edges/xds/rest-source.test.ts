/**
 * A REST config source: endpoints polled with JSON every refresh_delay from the test
 * management server's REST API, ACKed and NACKed in the next poll.
 */
import assert from 'node:assert/strict';
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, it } from 'node:test';
import { startProxyProcess } from '../../helpers/proxy-process.js';
import {
  assignment,
  edsBootstrap,
  get,
  staticCluster,
  statValue,
  until,
  upstream,
} from '../../helpers/xds-fixtures.js';
import { XdsServer } from '../../helpers/xds-server.js';

describe('EDS over REST', () => {
  it('polls, serves, follows an update and NACKs a bad one in the next poll', async () => {
    const xds = await XdsServer.start();
    const restPort = await xds.startRest();
    const a = await upstream('a');
    const b = await upstream('b');
    xds.set('eds', [assignment('some_service', [a.port])], 'v1');
    const bootstrap = edsBootstrap(xds.port, {
      api_config_source: {
        api_type: 'REST',
        cluster_names: ['rest_cluster'],
        refresh_delay: '0.100s',
        request_timeout: '1s',
      },
    });
    (bootstrap.static_resources as { clusters: unknown[] }).clusters.push(
      staticCluster('rest_cluster', [restPort]),
    );
    const proxy = await startProxyProcess(bootstrap, ['--concurrency', '1']);
    try {
      const port = await proxy.listenerPort('listener_0');
      assert.equal((await get(port)).body, 'a');
      const ack = await xds.ack('eds', 'v1');
      assert.equal(ack.method, 'REST /v2/discovery:endpoints');
      assert.deepEqual(ack.resource_names, ['some_service']);
      xds.set('eds', [assignment('some_service', [b.port])], 'v2');
      await until('the update serves', async () => (await get(port)).body === 'b');
      const from = xds.requests.length;
      xds.set('eds', [assignment('some_service', [a.port], { load_balancing_weight: 0 })], 'v3');
      const nack = await xds.nack('eds', 10_000, from);
      assert.equal(nack.version_info, 'v2');
      assert.match(nack.error_detail?.message ?? '', /load_balancing_weight: must be >= 1/);
      for (let i = 0; i < 5; i++) assert.equal((await get(port)).body, 'b');
    } finally {
      await proxy.stop();
      await xds.stop();
      await a.close();
      await b.close();
    }
  });
});

describe('a REST management server that streams a body without end', () => {
  it('fails the fetch past 32 MiB (the reference async client limit), long before request_timeout', async () => {
    // Root cause: the REST poller read the whole body (`arrayBuffer()`), bounded only by
    // `request_timeout`, so a server could stream into the proxy's memory for all of it (about
    // 200 MB a second over loopback). The reference's async client stops at 32 MiB.
    const chunk = Buffer.alloc(1 << 20, 'a');
    let written = 0;
    let closedAfter = -1;
    const server = http.createServer((req, res) => {
      req.resume();
      res.writeHead(200, { 'content-type': 'application/json' });
      const go = () => {
        for (let more = true; more && !res.destroyed; ) {
          written += chunk.length;
          more = res.write(chunk);
        }
      };
      res.on('drain', go);
      res.on('close', () => {
        if (closedAfter < 0) closedAfter = written;
      });
      go();
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const restPort = (server.address() as AddressInfo).port;
    const bootstrap = edsBootstrap(0, {
      initial_fetch_timeout: '1s',
      api_config_source: {
        api_type: 'REST',
        cluster_names: ['rest_cluster'],
        refresh_delay: '60s',
        request_timeout: '60s',
      },
    });
    (bootstrap.static_resources as { clusters: unknown[] }).clusters.push(
      staticCluster('rest_cluster', [restPort]),
    );
    const proxy = await startProxyProcess(bootstrap, ['--concurrency', '1']);
    try {
      await until(
        'the fetch to fail',
        async () => (await statValue(proxy, 'cluster.some_service.update_failure')) === 1,
        30_000,
      );
      await until('the connection to close', async () => closedAfter >= 0, 10_000);
      assert.ok(closedAfter < 48 * (1 << 20), `closed after ${closedAfter} bytes were written`);
      assert.ok(closedAfter >= 32 * (1 << 20), `${closedAfter} bytes written before the close`);
      assert.equal((await proxy.get('/ready')).status, 200);
    } finally {
      await proxy.stop();
      server.closeAllConnections();
      server.close();
    }
  });
});
