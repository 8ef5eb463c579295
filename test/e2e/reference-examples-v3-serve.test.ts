/**
 * The reference's front-proxy sandbox bootstrap (fixtures/reference-examples-v3/examples/
 * front-proxy/envoy.yaml) served as pasted but for where things are: its listeners on free
 * ports and its two STRICT_DNS clusters (docker hosts `service-envoy-1`, `-2`) pointed at two
 * upstreams on 127.0.0.1. Over its plain listener and its TLS one (the example's inline
 * self-signed certificate), with two workers, each path reaches its own service, as the
 * sandbox's README shows with curl.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import * as http from 'node:http';
import * as https from 'node:https';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { parse } from 'yaml';
import type { Dump } from '../helpers/bootstrap.js';
import { root } from '../helpers/bootstrap.js';
import { type ProxyProcess, startProxyProcess } from '../helpers/proxy-process.js';

const FRONT_PROXY = join(root, 'fixtures/reference-examples-v3/examples/front-proxy/envoy.yaml');

/** A service of the sandbox: answers with its name and the path it was asked for. */
async function service(name: string): Promise<http.Server> {
  const server = http.createServer((req, res) => res.end(`${name} ${req.url}`));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return server;
}

function get(port: number, path: string, tls: boolean): Promise<{ status: number; body: string }> {
  const client = tls ? https : http;
  return new Promise((resolve, reject) => {
    const req = client.get(
      { host: '127.0.0.1', port, path, rejectUnauthorized: false, agent: false },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (d: string) => {
          body += d;
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      },
    );
    req.setTimeout(10_000, () => req.destroy(new Error(`GET ${path} timed out`)));
    req.on('error', reject);
  });
}

describe("the reference's front-proxy sandbox, served", () => {
  const services: http.Server[] = [];
  let proxy: ProxyProcess;
  let plain: number;
  let secure: number;

  before(async () => {
    services.push(await service('service1'), await service('service2'));
    const bootstrap = parse(readFileSync(FRONT_PROXY, 'utf8')) as Dump;
    for (const listener of bootstrap.static_resources.listeners)
      listener.address.socket_address = { address: '127.0.0.1', port_value: 0 };
    bootstrap.static_resources.clusters.forEach((cluster: Dump, i: number) => {
      const endpoint = cluster.load_assignment.endpoints[0].lb_endpoints[0].endpoint;
      const port = (services[i]!.address() as AddressInfo).port;
      endpoint.address.socket_address = { address: '127.0.0.1', port_value: port };
    });
    bootstrap.admin = { address: { socket_address: { address: '127.0.0.1', port_value: 0 } } };
    proxy = await startProxyProcess(bootstrap, ['--concurrency', '2']);
    // The sandbox's listeners have no names: the loader names them in order.
    plain = await proxy.listenerPort('listener_0');
    secure = await proxy.listenerPort('listener_1');
  });

  after(async () => {
    await proxy?.stop();
    for (const s of services) s.close();
  });

  it('routes /service/1 and /service/2 to their services over HTTP and HTTPS', async () => {
    for (const [port, tls] of [
      [plain, false],
      [secure, true],
    ] as const) {
      // Several requests each, so both workers take some.
      for (let i = 0; i < 4; i++) {
        assert.deepEqual(await get(port, '/service/1', tls), { status: 200, body: 'service1 /service/1' });
        assert.deepEqual(await get(port, '/service/2', tls), { status: 200, body: 'service2 /service/2' });
      }
    }
  });

  it('answers 404 for a path no route matches', async () => {
    assert.equal((await get(plain, '/elsewhere', false)).status, 404);
    assert.equal((await get(secure, '/elsewhere', true)).status, 404);
  });
});
