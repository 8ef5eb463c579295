/**
 * The per-request filters on an HTTP/1.1 upgrade's head (src/dataplane/http/upgrade-filters.ts),
 * as the reference runs its chain on a WebSocket request: one that answers ends the upgrade
 * before any tunnel (RBAC's denial), one that holds the head delays the tunnel (fault's delay)
 * with the client's first bytes kept until it opens, and a client that leaves while a filter
 * holds ends the request. Real sockets: an upstream that switches protocols and echoes.
 */
import assert from 'node:assert/strict';
import * as net from 'node:net';
import { after, before, describe, it } from 'node:test';
import { until } from '../../helpers/dataplane.js';
import { rawExchange, startProxy, type TestProxy } from '../../helpers/http-dataplane.js';

/** Upgrades every request, then echoes what follows the head; counts the heads it saw. */
async function switchingUpstream(): Promise<{ server: net.Server; port: number; heads: () => number }> {
  let heads = 0;
  const server = net.createServer((socket) => {
    let head = Buffer.alloc(0);
    let switched = false;
    socket.on('data', (chunk: Buffer) => {
      if (switched) {
        socket.write(chunk);
        return;
      }
      head = Buffer.concat([head, chunk]);
      const end = head.indexOf('\r\n\r\n');
      if (end < 0) return;
      switched = true;
      heads += 1;
      socket.write('HTTP/1.1 101 Switching Protocols\r\nupgrade: websocket\r\nconnection: upgrade\r\n\r\n');
      const rest = head.subarray(end + 4);
      if (rest.length > 0) socket.write(rest);
    });
    socket.on('error', () => {});
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { server, port: (server.address() as net.AddressInfo).port, heads: () => heads };
}

const UPGRADE = 'GET /ws HTTP/1.1\r\nHost: x\r\nConnection: upgrade\r\nUpgrade: websocket\r\n\r\n';

let upstream: Awaited<ReturnType<typeof switchingUpstream>>;
const proxies: TestProxy[] = [];

async function proxyWith(filter: object): Promise<TestProxy> {
  const proxy = await startProxy(
    {
      stat_prefix: 'ingress',
      upgrade_configs: [{ upgrade_type: 'websocket' }],
      route_config: {
        virtual_hosts: [
          { name: 'all', domains: ['*'], routes: [{ match: { prefix: '/' }, route: { cluster: 'ws' } }] },
        ],
      },
      http_filters: [filter, { name: 'envoy.filters.http.router' }],
    },
    [{ raw: { name: 'ws', connect_timeout: '1s' }, addresses: [`127.0.0.1:${upstream.port}`] }],
  );
  proxies.push(proxy);
  return proxy;
}

const delay = (ms: number) => ({
  name: 'envoy.filters.http.fault',
  typed_config: {
    '@type': 'type.googleapis.com/envoy.extensions.filters.http.fault.v3.HTTPFault',
    delay: { fixed_delay: `${ms / 1000}s`, percentage: { numerator: 100 } },
  },
});

before(async () => {
  upstream = await switchingUpstream();
});

after(async () => {
  for (const p of proxies) await p.close();
  upstream.server.close();
});

describe('filters on an upgrade', () => {
  it('a filter that answers ends the upgrade before any tunnel opens', async () => {
    const proxy = await proxyWith({
      name: 'envoy.filters.http.rbac',
      typed_config: {
        '@type': 'type.googleapis.com/envoy.extensions.filters.http.rbac.v3.RBAC',
        rules: {
          action: 'DENY',
          policies: { all: { permissions: [{ any: true }], principals: [{ any: true }] } },
        },
      },
    });
    const heads = upstream.heads();
    const out = await rawExchange(proxy.port, UPGRADE, 3000);
    assert.match(out, /^HTTP\/1.1 403 /);
    assert.match(out, /RBAC: access denied$/);
    assert.equal(upstream.heads(), heads);
    assert.equal(proxy.counter('http.ingress.rbac.denied'), 1);
  });

  it('a filter that holds the head opens the tunnel when it passes it, with the bytes sent meanwhile', async () => {
    const proxy = await proxyWith(delay(200));
    const heads = upstream.heads();
    const out = await rawExchange(proxy.port, `${UPGRADE}early bytes`, 3000);
    assert.match(out, /^HTTP\/1.1 101 Switching Protocols\r\n/);
    assert.match(out, /\r\n\r\nearly bytes$/);
    assert.equal(upstream.heads(), heads + 1);
    assert.equal(proxy.counter('http.ingress.fault.delays_injected'), 1);
  });

  it('a client that leaves while a filter holds ends its request, and no tunnel opens', async () => {
    const proxy = await proxyWith(delay(1000));
    const heads = upstream.heads();
    const socket = net.connect(proxy.port, '127.0.0.1');
    socket.on('error', () => {});
    socket.write(UPGRADE);
    await until(() => proxy.gauge('http.ingress.downstream_rq_active') === 1, 5000);
    socket.destroy();
    await until(() => proxy.gauge('http.ingress.downstream_rq_active') === 0, 5000);
    await new Promise((r) => setTimeout(r, 1200));
    assert.equal(upstream.heads(), heads);
  });
});
