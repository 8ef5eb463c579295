/**
 * The reference's current Lua sandbox (fixtures/reference-examples-v3/examples/lua/envoy.yaml)
 * served as pasted but for its addresses, with two workers: two Lua filters by custom names,
 * the first adding `foo` from its required library to every request, the second running, on
 * `/multiple/lua/scripts` only, the script its route gives under the second filter's name
 * (`typed_per_filter_config.lua_filter_with_custom_name_1`, a `LuaPerRoute.source_code`). The
 * override belongs to that filter alone: the first keeps its own script on that route.
 */
import assert from 'node:assert/strict';
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { JsonObject } from '../../../../../events/index.js';
import { type Dump, load, root } from '../../../../helpers/bootstrap.js';
import { type ProxyProcess, startProxyProcess } from '../../../../helpers/proxy-process.js';

const SANDBOX = join(root, 'fixtures/reference-examples-v3/examples/lua');

function get(port: number, path: string): Promise<{ headers: http.IncomingHttpHeaders; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.get({ host: '127.0.0.1', port, path, agent: false }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => {
        body += d;
      });
      res.on('end', () => resolve({ headers: res.headers, body }));
    });
    req.setTimeout(20_000, () => req.destroy(new Error(`GET ${path} timed out`)));
    req.on('error', reject);
  });
}

describe("the reference's Lua sandbox (v3: filters by custom names, a route's own script)", () => {
  let upstream: http.Server;
  let proxy: ProxyProcess;
  let port: number;

  before(async () => {
    // web_service: answers the request headers it got, as JSON.
    upstream = http.createServer((req, res) => res.end(JSON.stringify(req.headers)));
    await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
    const loaded = load({ configPath: join(SANDBOX, 'envoy.yaml') });
    assert.ok(loaded.ok, loaded.ok ? '' : loaded.errors.join('\n'));
    const b = structuredClone(loaded.bootstrap) as Dump;
    b.static_resources.listeners[0].address.socket_address = { address: '127.0.0.1', port_value: 0 };
    b.static_resources.clusters[0].load_assignment.endpoints[0].lb_endpoints[0].endpoint.address.socket_address =
      { address: '127.0.0.1', port_value: (upstream.address() as AddressInfo).port };
    b.admin = { address: { socket_address: { address: '127.0.0.1', port_value: 0 } } };
    // Its image copies lib/mylibrary.lua under the working directory; LUA_PATH says where it is here.
    proxy = await startProxyProcess(b as JsonObject, ['--concurrency', '2'], 30_000, {
      LUA_PATH: `${SANDBOX}/?.lua;;`,
    });
    port = await proxy.listenerPort('main');
  });
  after(async () => {
    await proxy?.stop();
    upstream.close();
  });

  it("runs the route's script under the second filter's name there, and only there", async () => {
    for (let i = 0; i < 4; i++) {
      const scripted = await get(port, '/multiple/lua/scripts');
      assert.equal(scripted.headers.header_key_1, 'header_value_1');
      assert.equal(JSON.parse(scripted.body).foo, 'bar', 'the first filter keeps its own script');
      const plain = await get(port, '/');
      assert.equal(plain.headers.header_key_1, undefined);
      assert.equal(JSON.parse(plain.body).foo, 'bar');
    }
    assert.doesNotMatch(proxy.stderr(), /failed to load|script log/);
  });
});
