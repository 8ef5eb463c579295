/**
 * The reference's locality-load-balancing sandbox (fixtures/reference-examples-v3/examples/
 * locality-load-balancing/envoy.yaml) served as pasted but for where things are: its four
 * backends (docker hosts `backend-local-1` ... `backend-remote-2`, each endpoint's
 * `health_check_config` naming its own port) on local upstreams. Active HTTP health checks
 * keep every request on the healthy highest priority, as its README shows: priority 0 while it
 * passes its checks, priority 1 (local-2 and remote-1) once it fails them.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { parse } from 'yaml';
import { type Dump, root } from '../helpers/bootstrap.js';
import { type ProxyProcess, startProxyProcess } from '../helpers/proxy-process.js';

const SANDBOX = join(root, 'fixtures/reference-examples-v3/examples/locality-load-balancing/envoy.yaml');
const NAMES = ['backend-local-1', 'backend-local-2', 'backend-remote-1', 'backend-remote-2'];

/** A backend answering its name, or 503 to everything while `failing`. */
function backend(name: string): { server: http.Server; failing: boolean } {
  const b = {
    failing: false,
    server: http.createServer((_req, res) => {
      res.writeHead(b.failing ? 503 : 200);
      res.end(name);
    }),
  };
  return b;
}

function get(port: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const req = http.get({ host: '127.0.0.1', port, path: '/', agent: false }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => {
        body += d;
      });
      res.on('end', () => resolve(`${res.statusCode} ${body}`));
    });
    req.setTimeout(10_000, () => req.destroy(new Error('GET timed out')));
    req.on('error', reject);
  });
}

/** Asks until an answer satisfies `ok` (bounded: health checks run every 2 s). */
async function until(port: number, ok: (answer: string) => boolean): Promise<void> {
  const deadline = Date.now() + 30_000;
  let last = '';
  while (Date.now() < deadline) {
    last = await get(port);
    if (ok(last)) return;
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`no answer as expected within 30 s; last: ${last}`);
}

describe("the reference's locality-load-balancing sandbox, served", () => {
  const backends = NAMES.map(backend);
  let proxy: ProxyProcess;
  let port: number;

  before(async () => {
    for (const b of backends) await new Promise<void>((resolve) => b.server.listen(0, '127.0.0.1', resolve));
    const bootstrap = parse(readFileSync(SANDBOX, 'utf8')) as Dump;
    bootstrap.static_resources.listeners[0].address.socket_address = { address: '127.0.0.1', port_value: 0 };
    bootstrap.static_resources.clusters[0].load_assignment.endpoints.forEach((group: Dump, i: number) => {
      const endpoint = group.lb_endpoints[0].endpoint;
      const local = ((backends[i] as { server: http.Server }).server.address() as AddressInfo).port;
      endpoint.address.socket_address = { address: '127.0.0.1', port_value: local };
      endpoint.health_check_config.port_value = local;
    });
    bootstrap.admin = { address: { socket_address: { address: '127.0.0.1', port_value: 0 } } };
    proxy = await startProxyProcess(bootstrap);
    port = await proxy.listenerPort('backend');
  });
  after(async () => {
    await proxy?.stop();
    for (const b of backends) b.server.close();
  });

  // Regression: at --concurrency 2 the first checks' verdicts, held in the primary's merge
  // window while the worker thread started, reached neither its snapshot nor the envelopes
  // after it, so the worker saw priorities 1 and 2 failing and panicked across all hosts.
  it('sends every request to priority 0 while it passes its checks, then to priority 1', async () => {
    await until(port, (a) => a === '200 backend-local-1');
    for (let i = 0; i < 6; i++) assert.equal(await get(port), '200 backend-local-1');
    (backends[0] as { failing: boolean }).failing = true;
    await until(port, (a) => a === '200 backend-local-2' || a === '200 backend-remote-1');
    const seen = new Set<string>();
    for (let i = 0; i < 10; i++) seen.add(await get(port));
    assert.ok(!seen.has('200 backend-local-1') && !seen.has('503 backend-local-1'), [...seen].join(', '));
    assert.ok(
      [...seen].every((a) => a === '200 backend-local-2' || a === '200 backend-remote-1'),
      [...seen].join(', '),
    );
  });
});
