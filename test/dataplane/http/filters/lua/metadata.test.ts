/**
 * Lua's `metadata()`: the route's filter metadata under the filter's `http_filters` name, else
 * its virtual host's, from the reference's Lua filter docs bootstrap
 * (envoy/docs/root/configuration/http/http_filters/_include/lua-filter.yaml), served with its
 * metadata as pasted, its no-op script replaced by one that reports what `metadata()` holds, a
 * second route without metadata beside the first, and its upstream on a local server.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { parse } from 'yaml';
import { type Dump, root } from '../../../../helpers/bootstrap.js';
import { type ProxyProcess, startProxyProcess } from '../../../../helpers/proxy-process.js';

const DOCS = join(
  root,
  'fixtures/reference-examples-v3/envoy/docs/root/configuration/http/http_filters/_include/lua-filter.yaml',
);

const SCRIPT = `
function envoy_on_response(response_handle)
  local md = response_handle:metadata()
  local baz = md:get('baz')
  response_handle:headers():add('x-foo', tostring(md:get('foo')))
  response_handle:headers():add('x-baz', baz and table.concat(baz, ',') or 'nil')
end
`;

function get(port: number, path: string): Promise<http.IncomingHttpHeaders> {
  return new Promise((resolve, reject) => {
    const req = http.get({ host: '127.0.0.1', port, path, agent: false }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.headers));
    });
    req.setTimeout(20_000, () => req.destroy(new Error(`GET ${path} timed out`)));
    req.on('error', reject);
  });
}

describe("Lua's metadata(), from the reference's Lua filter docs bootstrap", () => {
  let upstream: http.Server;
  let proxy: ProxyProcess;
  let port: number;

  before(async () => {
    upstream = http.createServer((_req, res) => res.end('ok'));
    await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
    const b = parse(readFileSync(DOCS, 'utf8')) as Dump;
    const listener = b.static_resources.listeners[0];
    listener.address.socket_address = { address: '127.0.0.1', port_value: 0 };
    const hcm = listener.filter_chains[0].filters[0].typed_config;
    hcm.http_filters[0].typed_config.default_source_code.inline_string = SCRIPT;
    const vh = hcm.route_config.virtual_hosts[0];
    vh.routes.unshift({ match: { prefix: '/plain' }, route: { cluster: 'upstream_com' } });
    const cluster = b.static_resources.clusters[0];
    cluster.type = 'STATIC';
    delete cluster.transport_socket;
    cluster.load_assignment.endpoints[0].lb_endpoints[0].endpoint.address.socket_address = {
      address: '127.0.0.1',
      port_value: (upstream.address() as AddressInfo).port,
    };
    b.admin = { address: { socket_address: { address: '127.0.0.1', port_value: 0 } } };
    proxy = await startProxyProcess(b, ['--concurrency', '2']);
    port = await proxy.listenerPort('listener_0');
  });
  after(async () => {
    await proxy?.stop();
    upstream.close();
  });

  it("reads the route's metadata under the filter's name, else the virtual host's", async () => {
    const routed = await get(port, '/');
    assert.equal(routed['x-foo'], 'bar');
    assert.equal(routed['x-baz'], 'bad,baz');
    const plain = await get(port, '/plain');
    assert.equal(plain['x-foo'], 'vh-bar');
    assert.equal(plain['x-baz'], 'vh-bad,vh-baz');
  });
});
