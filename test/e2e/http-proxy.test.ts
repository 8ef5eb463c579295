import assert from 'node:assert/strict';
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import { test } from 'node:test';
import { hcmWithRoutes, httpBootstrap } from '../helpers/bootstraps.js';
import { cleanupsAfterAll } from '../helpers/cleanups.js';
import { cluster } from '../helpers/dataplane.js';
import { startProxyProcess } from '../helpers/proxy-process.js';

const cleanups = cleanupsAfterAll();

test('proxy serves HTTP through the bootstrap listener; /stats shows the traffic', async () => {
  const upstream = http.createServer((req, res) => res.end(`upstream saw ${req.url}`));
  await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
  cleanups.push(() => {
    upstream.close();
    upstream.closeAllConnections();
  });
  const upPort = (upstream.address() as AddressInfo).port;
  const proxy = await startProxyProcess(
    httpBootstrap(
      [cluster('web', [upPort])],
      hcmWithRoutes([
        { match: { prefix: '/static' }, direct_response: { status: 200, body: { inline_string: 'hi' } } },
        { match: { prefix: '/' }, route: { cluster: 'web' } },
      ]),
    ),
    ['--concurrency', '1'],
  );
  cleanups.push(proxy.stop);
  const port = await proxy.listenerPort('http');
  const direct = await fetch(`http://127.0.0.1:${port}/static`);
  assert.equal(await direct.text(), 'hi');
  const proxied = await fetch(`http://127.0.0.1:${port}/some/path`);
  assert.equal(proxied.status, 200);
  assert.equal(await proxied.text(), 'upstream saw /some/path');
  const stats = await proxy.get('/stats');
  assert.match(stats.body, /http\.ingress_http\.downstream_rq_2xx: 2/);
  assert.match(stats.body, /cluster\.web\.upstream_rq_200: 1/);
});
