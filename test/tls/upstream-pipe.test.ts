/**
 * An endpoint on a unix socket (`address.pipe`), as meshes' bootstraps name their agents
 * (Istio's `sds-grpc` and `xds-grpc`, Kuma's access log sink): the pools and the health
 * checks dial it by its path (src/tls/upstream.ts), plain and over TLS alike. Before, a pipe
 * endpoint was read as the address ':0' and silently never reached.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import * as http from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { JsonObject } from '../../events/index.js';
import { errorsOf, loadYaml } from '../helpers/bootstrap.js';
import { hcmWithRoutes, httpBootstrap } from '../helpers/bootstraps.js';
import { type ProxyProcess, startProxyProcess } from '../helpers/proxy-process.js';

function pipeCluster(name: string, path: string, extra: JsonObject = {}): JsonObject {
  return {
    name,
    connect_timeout: '1s',
    type: 'STATIC',
    load_assignment: {
      cluster_name: name,
      endpoints: [{ lb_endpoints: [{ endpoint: { address: { pipe: { path } } } }] }],
    },
    ...extra,
  };
}

describe('a STATIC cluster whose endpoint is a unix socket', () => {
  let dir: string;
  let upstream: http.Server;
  let proxy: ProxyProcess;
  const seen: string[] = [];

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'pipe-'));
    upstream = http.createServer((req, res) => {
      seen.push(req.url ?? '');
      res.end(`over the socket: ${req.url}`);
    });
    await new Promise<void>((r) => upstream.listen(join(dir, 'agent.sock'), r));
    const checked = {
      health_checks: [
        {
          timeout: '1s',
          interval: '0.1s',
          unhealthy_threshold: 1,
          healthy_threshold: 1,
          http_health_check: { path: '/healthz' },
        },
      ],
    };
    proxy = await startProxyProcess(
      httpBootstrap(
        [pipeCluster('agent', join(dir, 'agent.sock'), checked)],
        hcmWithRoutes([{ match: { prefix: '/' }, route: { cluster: 'agent' } }]),
      ),
      ['--concurrency', '2'],
    );
  });
  after(async () => {
    await proxy?.stop();
    upstream?.closeAllConnections();
    await new Promise((r) => upstream?.close(r));
    rmSync(dir, { recursive: true, force: true });
  });

  it('proxies to it and health checks it by its path', async () => {
    const port = await proxy.listenerPort('http');
    for (let i = 0; i < 4; i++) {
      const res = await fetch(`http://127.0.0.1:${port}/x${i}`);
      assert.equal(await res.text(), `over the socket: /x${i}`);
    }
    const deadline = Date.now() + 10_000;
    while (!seen.includes('/healthz') && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    assert.ok(seen.includes('/healthz'), 'a health check came over the socket');
    const clusters = (await proxy.get('/clusters')).body;
    assert.match(clusters, new RegExp(`^agent::${join(dir, 'agent.sock')}::health_flags::healthy$`, 'm'));
  });
});

describe('a pipe endpoint in a cluster that resolves names', () => {
  it('is refused naming it: DNS has nothing to resolve in a path', () => {
    const errors = errorsOf(
      loadYaml(
        `static_resources: { clusters: [{ name: c, connect_timeout: 1s, type: STRICT_DNS, load_assignment: { cluster_name: c, endpoints: [{ lb_endpoints: [{ endpoint: { address: { pipe: { path: /run/x.sock } } } }] }] } }] }`,
      ),
    );
    assert.match(
      errors.join('\n'),
      /clusters\[0\]\.load_assignment\.endpoints\[0\]\.lb_endpoints\[0\]\.endpoint\.address\.pipe: a pipe endpoint needs a STATIC or EDS cluster/,
    );
  });
});
