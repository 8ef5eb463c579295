/**
 * Issue 11 finding 6, end to end: clusters named `__proto__` and `constructor` validate,
 * show in /clusters and /config_dump, and carry traffic, instead of silently disappearing.
 */
import assert from 'node:assert/strict';
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import { test } from 'node:test';
import { hcmWithRoutes, httpBootstrap } from '../helpers/bootstraps.js';
import { cleanupsAfterAll } from '../helpers/cleanups.js';
import { cluster } from '../helpers/dataplane.js';
import { startProxyProcess } from '../helpers/proxy-process.js';

const cleanups = cleanupsAfterAll();

test('clusters named __proto__ and constructor work as clusters', async () => {
  const upstream = http.createServer((req, res) => res.end(`upstream ${req.url}`));
  await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
  cleanups.push(() => {
    upstream.close();
    upstream.closeAllConnections();
  });
  const upPort = (upstream.address() as AddressInfo).port;
  const names = ['__proto__', 'constructor', 'toString'];
  const proxy = await startProxyProcess(
    httpBootstrap(
      names.map((name) => cluster(name, [upPort])),
      hcmWithRoutes(
        names.map((name) => ({ match: { prefix: `/${name}` }, route: { cluster: name } })),
        'ingress',
      ),
    ),
    ['--concurrency', '1'],
  );
  cleanups.push(proxy.stop);
  const clusters = (await proxy.get('/clusters')).body;
  for (const name of names) assert.match(clusters, new RegExp(`^${name}::added_via_api::false$`, 'm'));
  const dump = JSON.parse((await proxy.get('/config_dump?resource=static_clusters&mask=cluster.name')).body);
  assert.deepEqual(
    dump.configs.map((c: { cluster: { name: string } }) => c.cluster.name),
    names,
  );
  const port = await proxy.listenerPort('http');
  for (const name of names) {
    const res = await fetch(`http://127.0.0.1:${port}/${name}`, { signal: AbortSignal.timeout(5000) });
    assert.equal(res.status, 200, name);
    assert.equal(await res.text(), `upstream /${name}`);
  }
  const stats = (await proxy.get('/stats?filter=^cluster\\.__proto__\\.upstream_rq_total$')).body;
  assert.equal(stats, 'cluster.__proto__.upstream_rq_total: 1\n');
});
