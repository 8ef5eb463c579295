/**
 * A REST config source: endpoints polled with JSON every refresh_delay from the test
 * management server's REST API, ACKed and NACKed in the next poll.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { startProxyProcess } from '../../helpers/proxy-process.js';
import { assignment, edsBootstrap, get, staticCluster, until, upstream } from '../../helpers/xds-fixtures.js';
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
