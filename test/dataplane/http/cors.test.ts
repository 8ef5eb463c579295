/**
 * The CORS filter over real sockets: a counting upstream on loopback, the connection manager
 * in front with virtual host and route `cors` policies, requests sent with node:http so the
 * `Origin` and `Access-Control-Request-*` headers go out exactly as written.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { compileTestHcm } from '../../helpers/compile.js';
import { startProxy, type TestProxy } from '../../helpers/http-dataplane.js';
import { type Answer, countingUpstream, send } from '../../helpers/http-send.js';

const ACCESS_CONTROL = /^access-control-/;
const accessControl = (a: Answer) => Object.keys(a.headers).filter((h) => ACCESS_CONTROL.test(h));

const percent = (numerator: number) => ({ default_value: { numerator, denominator: 'HUNDRED' } });

/** The v3 filter's own per-route policy, as the reference's cors sandbox writes it. */
const v3Policy = (fields: Record<string, unknown>) => ({
  '@type': 'type.googleapis.com/envoy.extensions.filters.http.cors.v3.CorsPolicy',
  ...fields,
});

let upstream: Awaited<ReturnType<typeof countingUpstream>>;
let proxy: TestProxy;

before(async () => {
  upstream = await countingUpstream();
  const route = (prefix: string, extra: Record<string, unknown> = {}) => ({
    match: { prefix },
    route: { cluster: 'backend', ...extra },
  });
  proxy = await startProxy(
    {
      stat_prefix: 'ingress',
      route_config: {
        virtual_hosts: [
          {
            name: 'www',
            domains: ['*'],
            cors: {
              allow_origin: ['http://allowed.example'],
              allow_origin_regex: ['https://.*\\.regex\\.example'],
              allow_origin_string_match: [{ suffix: '.suffix.example' }],
              allow_methods: 'GET, POST',
              allow_headers: 'x-custom',
              expose_headers: 'x-exposed',
              max_age: '600',
              allow_credentials: true,
            },
            routes: [
              route('/disabled', { cors: { filter_enabled: percent(0) } }),
              route('/legacy-off', { cors: { enabled: false } }),
              route('/shadow', { cors: { filter_enabled: percent(0), shadow_enabled: percent(100) } }),
              route('/own', {
                cors: { allow_origin_string_match: [{ exact: 'http://own.example' }], allow_methods: 'PUT' },
              }),
              route('/any', {
                cors: { allow_origin_string_match: [{ safe_regex: { google_re2: {}, regex: '\\*' } }] },
              }),
              route('/nocreds', { cors: { allow_credentials: false } }),
              {
                ...route('/v3-policy', { cors: { allow_origin: ['http://route-field.example'] } }),
                typed_per_filter_config: {
                  'envoy.filters.http.cors': v3Policy({
                    allow_origin_string_match: [{ exact: 'http://v3.example' }],
                    allow_methods: 'PATCH',
                  }),
                },
              },
              {
                ...route('/v3-off'),
                typed_per_filter_config: {
                  'envoy.filters.http.cors': v3Policy({ filter_enabled: percent(0) }),
                },
              },
              { match: { prefix: '/direct' }, direct_response: { status: 204 } },
              route('/missing', { cluster: 'nowhere' }),
              route('/'),
            ],
          },
        ],
      },
      http_filters: [{ name: 'envoy.cors' }, { name: 'envoy.router' }],
    },
    [{ raw: { name: 'backend', connect_timeout: '1s' }, addresses: [`127.0.0.1:${upstream.port}`] }],
  );
});

after(async () => {
  await proxy.close();
  upstream.server.close();
});

const preflight = (origin: string, extra: Record<string, string> = {}) => ({
  origin,
  'access-control-request-method': 'POST',
  ...extra,
});

describe('CORS filter', () => {
  it('answers a preflight from an allowed origin itself, with every setting of the policy', async () => {
    const before = upstream.seen.length;
    const a = await send(proxy.port, 'OPTIONS', '/thing', preflight('http://allowed.example'));
    assert.equal(a.status, 200);
    assert.equal(a.headers['access-control-allow-origin'], 'http://allowed.example');
    assert.equal(a.headers['access-control-allow-credentials'], 'true');
    assert.equal(a.headers['access-control-allow-methods'], 'GET, POST');
    assert.equal(a.headers['access-control-allow-headers'], 'x-custom');
    assert.equal(a.headers['access-control-max-age'], '600');
    assert.equal(a.headers['access-control-expose-headers'], 'x-exposed');
    assert.equal(upstream.seen.length, before, 'the preflight never reached the upstream');
  });

  it('marks the response of an actual request from an allowed origin', async () => {
    const a = await send(proxy.port, 'GET', '/thing', { origin: 'http://allowed.example' });
    assert.equal(a.status, 200);
    assert.equal(a.body, 'upstream');
    assert.equal(a.headers['access-control-allow-origin'], 'http://allowed.example');
    assert.equal(a.headers['access-control-allow-credentials'], 'true');
    assert.equal(a.headers['access-control-expose-headers'], 'x-exposed');
    assert.equal(a.headers['access-control-allow-methods'], undefined, 'methods only on a preflight');
  });

  it('adds nothing for an origin that does not match, and forwards its preflight', async () => {
    const before = upstream.seen.length;
    const a = await send(proxy.port, 'OPTIONS', '/thing', preflight('http://evil.example'));
    assert.equal(a.body, 'upstream');
    assert.deepEqual(accessControl(a), []);
    assert.equal(upstream.seen.length, before + 1);
    const b = await send(proxy.port, 'GET', '/thing', { origin: 'http://allowed.example.evil' });
    assert.deepEqual(accessControl(b), []);
  });

  it('allows origins by regex and by string matcher, whole-string', async () => {
    for (const origin of ['https://a.regex.example', 'http://x.suffix.example']) {
      const a = await send(proxy.port, 'GET', '/thing', { origin });
      assert.equal(a.headers['access-control-allow-origin'], origin, origin);
    }
    const partial = await send(proxy.port, 'GET', '/thing', { origin: 'https://a.regex.example.evil' });
    assert.deepEqual(accessControl(partial), []);
  });

  it('leaves requests without an Origin alone', async () => {
    const a = await send(proxy.port, 'OPTIONS', '/thing', { 'access-control-request-method': 'GET' });
    assert.equal(a.body, 'upstream');
    assert.deepEqual(accessControl(a), []);
  });

  it('a route turns it off with filter_enabled 0 or the deprecated enabled: false', async () => {
    for (const path of ['/disabled', '/legacy-off']) {
      const a = await send(proxy.port, 'OPTIONS', path, preflight('http://allowed.example'));
      assert.equal(a.body, 'upstream', path);
      assert.deepEqual(accessControl(a), [], path);
    }
  });

  it('in shadow mode counts origins but changes nothing', async () => {
    const valid = proxy.counter('http.ingress.cors.origin_valid');
    const invalid = proxy.counter('http.ingress.cors.origin_invalid');
    const a = await send(proxy.port, 'OPTIONS', '/shadow', preflight('http://allowed.example'));
    assert.equal(a.body, 'upstream');
    assert.deepEqual(accessControl(a), []);
    await send(proxy.port, 'GET', '/shadow', { origin: 'http://evil.example' });
    assert.equal(proxy.counter('http.ingress.cors.origin_valid'), valid + 1);
    assert.equal(proxy.counter('http.ingress.cors.origin_invalid'), invalid + 1);
  });

  it("a route's own settings come first, the virtual host's fill the rest", async () => {
    const own = await send(proxy.port, 'OPTIONS', '/own', preflight('http://own.example'));
    assert.equal(own.status, 200);
    assert.equal(own.headers['access-control-allow-methods'], 'PUT');
    assert.equal(own.headers['access-control-allow-headers'], 'x-custom', 'from the virtual host');
    assert.equal(own.headers['access-control-allow-credentials'], 'true', 'from the virtual host');
    const vhOrigin = await send(proxy.port, 'GET', '/own', { origin: 'http://allowed.example' });
    assert.deepEqual(accessControl(vhOrigin), [], "the route's origins replace the virtual host's");
    const noCreds = await send(proxy.port, 'GET', '/nocreds', { origin: 'http://allowed.example' });
    assert.equal(noCreds.headers['access-control-allow-origin'], 'http://allowed.example');
    assert.equal(noCreds.headers['access-control-allow-credentials'], undefined);
  });

  it("takes v3's CorsPolicy from typed_per_filter_config over the route's cors field", async () => {
    // Root cause: the v3 per-route CorsPolicy (the reference's cors and csrf sandboxes) was an
    // unknown type URL, so those bootstraps were refused.
    const own = await send(proxy.port, 'OPTIONS', '/v3-policy', preflight('http://v3.example'));
    assert.equal(own.status, 200);
    assert.equal(own.headers['access-control-allow-origin'], 'http://v3.example');
    assert.equal(own.headers['access-control-allow-methods'], 'PATCH');
    assert.equal(own.headers['access-control-allow-headers'], 'x-custom', 'from the virtual host');
    const field = await send(proxy.port, 'GET', '/v3-policy', { origin: 'http://route-field.example' });
    assert.deepEqual(accessControl(field), [], "the route's cors field is not read");
    const off = await send(proxy.port, 'GET', '/v3-off', { origin: 'http://allowed.example' });
    assert.equal(off.status, 200);
    assert.deepEqual(accessControl(off), [], 'filter_enabled 0 turns it off for the route');
  });

  it("a matcher matching '*' allows every origin, as the reference's", async () => {
    const a = await send(proxy.port, 'GET', '/any', { origin: 'http://whoever.example' });
    assert.equal(a.headers['access-control-allow-origin'], 'http://whoever.example');
  });

  it('marks local replies on routes to a cluster, not direct responses', async () => {
    const missing = await send(proxy.port, 'GET', '/missing', { origin: 'http://allowed.example' });
    assert.equal(missing.status, 503);
    assert.equal(missing.headers['access-control-allow-origin'], 'http://allowed.example');
    const direct = await send(proxy.port, 'GET', '/direct', { origin: 'http://allowed.example' });
    assert.equal(direct.status, 204);
    assert.deepEqual(accessControl(direct), []);
  });

  it('counts valid and invalid origins under http.<stat_prefix>.cors', async () => {
    const valid = proxy.counter('http.ingress.cors.origin_valid');
    const invalid = proxy.counter('http.ingress.cors.origin_invalid');
    await send(proxy.port, 'GET', '/x', { origin: 'http://allowed.example' });
    await send(proxy.port, 'GET', '/x', { origin: 'http://evil.example' });
    await send(proxy.port, 'GET', '/x');
    assert.equal(proxy.counter('http.ingress.cors.origin_valid'), valid + 1);
    assert.equal(proxy.counter('http.ingress.cors.origin_invalid'), invalid + 1);
  });
});

describe('CORS and CSRF filter names', () => {
  it('any spelling, or the @type alone, v2 or v3, picks the filter', () => {
    const chain = (filter: Record<string, unknown>) =>
      compileTestHcm({
        stat_prefix: 's',
        route_config: { virtual_hosts: [] },
        http_filters: [filter, { name: 'envoy.router' }],
      }).filters.stream.map((f) => /\.(cors|csrf)\./.exec(f.configType)?.[1]);
    const typed = (type: string) => ({ typed_config: { '@type': `type.googleapis.com/${type}` } });
    for (const name of ['envoy.cors', 'proxy.cors', 'envoy.filters.http.cors', 'proxy.filters.http.cors'])
      assert.deepEqual(chain({ name }), ['cors'], name);
    assert.deepEqual(chain(typed('envoy.config.filter.http.cors.v2.Cors')), ['cors']);
    assert.deepEqual(chain(typed('envoy.extensions.filters.http.cors.v3.Cors')), ['cors']);
    const csrf = { filter_enabled: { default_value: { numerator: 1 } } };
    assert.deepEqual(chain({ name: 'proxy.csrf', config: csrf }), ['csrf']);
    assert.deepEqual(
      chain({
        typed_config: { '@type': 'type.googleapis.com/envoy.config.filter.http.csrf.v2.CsrfPolicy', ...csrf },
      }),
      ['csrf'],
    );
  });
});

// Root cause (issue 25): a policy's methods, headers and max age were written into responses as
// configured, so CR or LF in them injected response fields.
describe('CORS policy values', () => {
  it('CR, LF or NUL in a value written into responses is an error at its field', () => {
    assert.throws(
      () =>
        compileTestHcm({
          stat_prefix: 'x',
          http_filters: [{ name: 'envoy.filters.http.cors' }, { name: 'envoy.filters.http.router' }],
          route_config: {
            virtual_hosts: [
              {
                name: 'v',
                domains: ['*'],
                cors: { allow_origin: ['a'], allow_methods: 'GET\r\nSet-Cookie: x=1', max_age: '1\n' },
                routes: [{ match: { prefix: '/' }, direct_response: { status: 200 } }],
              },
            ],
          },
        }),
      /cors\.allow_methods: .*CR, LF or NUL[\s\S]*cors\.max_age: .*CR, LF or NUL/,
    );
  });
});
