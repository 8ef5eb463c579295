/**
 * The CORS filter as a chain filter (src/dataplane/http/filters/cors.ts): it acts at its place
 * in `http_filters`, as the reference's does. A filter before it that answers the request
 * (fault's abort, CSRF's refusal) answers before CORS decided, so that answer carries no CORS
 * headers; listed after CORS, the same answer passes CORS's encoder and is marked. Real
 * sockets: a counting upstream on loopback, the connection manager in front.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startProxy, type TestProxy } from '../../../helpers/http-dataplane.js';
import { countingUpstream, send } from '../../../helpers/http-send.js';

const ORIGIN = 'http://allowed.example';
const CORS = { name: 'envoy.filters.http.cors' };
const ABORT = {
  name: 'envoy.filters.http.fault',
  typed_config: {
    '@type': 'type.googleapis.com/envoy.extensions.filters.http.fault.v3.HTTPFault',
    abort: { http_status: 418, percentage: { numerator: 100 } },
  },
};
const CSRF = {
  name: 'envoy.filters.http.csrf',
  typed_config: {
    '@type': 'type.googleapis.com/envoy.extensions.filters.http.csrf.v3.CsrfPolicy',
    filter_enabled: { default_value: { numerator: 100 } },
  },
};

let upstream: Awaited<ReturnType<typeof countingUpstream>>;
const proxies: TestProxy[] = [];

/** A connection manager running `filters` then the router, every route allowing ORIGIN. */
async function proxyWith(filters: object[]): Promise<TestProxy> {
  const proxy = await startProxy(
    {
      stat_prefix: 'ingress',
      route_config: {
        virtual_hosts: [
          {
            name: 'www',
            domains: ['*'],
            cors: { allow_origin: [ORIGIN], allow_methods: 'GET, POST', expose_headers: 'x-exposed' },
            routes: [{ match: { prefix: '/' }, route: { cluster: 'backend' } }],
          },
        ],
      },
      http_filters: [...filters, { name: 'envoy.filters.http.router' }],
    },
    [{ raw: { name: 'backend', connect_timeout: '1s' }, addresses: [`127.0.0.1:${upstream.port}`] }],
  );
  proxies.push(proxy);
  return proxy;
}

before(async () => {
  upstream = await countingUpstream();
});

after(async () => {
  for (const p of proxies) await p.close();
  upstream.server.close();
});

describe('CORS at its place in the chain', () => {
  it('before a filter that answers, marks that answer', async () => {
    const proxy = await proxyWith([CORS, ABORT]);
    const a = await send(proxy.port, 'GET', '/x', { origin: ORIGIN });
    assert.equal(a.status, 418);
    assert.equal(a.headers['access-control-allow-origin'], ORIGIN);
    assert.equal(a.headers['access-control-expose-headers'], 'x-exposed');
    assert.equal(proxy.counter('http.ingress.cors.origin_valid'), 1);
  });

  it('after a filter that answers, never decides: the answer has no CORS headers', async () => {
    const proxy = await proxyWith([ABORT, CORS]);
    const a = await send(proxy.port, 'GET', '/x', { origin: ORIGIN });
    assert.equal(a.status, 418);
    assert.equal(a.headers['access-control-allow-origin'], undefined);
    assert.equal(proxy.counter('http.ingress.cors.origin_valid'), 0);
  });

  it("after a filter that answers, never answers a preflight: the earlier filter's answer stands", async () => {
    const proxy = await proxyWith([ABORT, CORS]);
    const before = upstream.seen.length;
    const a = await send(proxy.port, 'OPTIONS', '/x', {
      origin: ORIGIN,
      'access-control-request-method': 'POST',
    });
    assert.equal(a.status, 418);
    assert.equal(a.headers['access-control-allow-methods'], undefined);
    assert.equal(upstream.seen.length, before);
  });

  it('after CSRF, leaves its refusal unmarked; the request CSRF lets through is marked', async () => {
    const proxy = await proxyWith([CSRF, CORS]);
    const refused = await send(proxy.port, 'POST', '/form', { origin: ORIGIN });
    assert.equal(refused.status, 403);
    assert.equal(refused.body, 'Invalid origin');
    assert.equal(refused.headers['access-control-allow-origin'], undefined);
    const passed = await send(proxy.port, 'GET', '/page', { origin: ORIGIN });
    assert.equal(passed.status, 200);
    assert.equal(passed.body, 'upstream');
    assert.equal(passed.headers['access-control-allow-origin'], ORIGIN);
  });
});
