/**
 * The CSRF filter over real sockets: a counting upstream on loopback behind a connection
 * manager whose chain is CORS, CSRF, router, as the reference's samesite example writes it;
 * routes and the virtual host override the filter's policy through `per_filter_config` and
 * `typed_per_filter_config`.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { compileLoadedRoutes, findingsOf } from '../../helpers/compile.js';
import { rawExchange, startProxy, type TestProxy } from '../../helpers/http-dataplane.js';
import { countingUpstream, send } from '../../helpers/http-send.js';

const percent = (numerator: number) => ({ default_value: { numerator, denominator: 'HUNDRED' } });
const CSRF_TYPE = 'type.googleapis.com/envoy.config.filter.http.csrf.v2.CsrfPolicy';

let upstream: Awaited<ReturnType<typeof countingUpstream>>;
let proxy: TestProxy;
let self: string;

before(async () => {
  upstream = await countingUpstream();
  const route = (prefix: string, extra: Record<string, unknown> = {}) => ({
    match: { prefix },
    route: { cluster: 'backend' },
    ...extra,
  });
  proxy = await startProxy(
    {
      stat_prefix: 'ingress',
      upgrade_configs: [{ upgrade_type: 'websocket' }],
      route_config: {
        virtual_hosts: [
          {
            name: 'lenient',
            domains: ['lenient.example'],
            per_filter_config: { 'envoy.csrf': { filter_enabled: percent(0) } },
            routes: [route('/')],
          },
          {
            name: 'www',
            domains: ['*'],
            cors: { allow_origin: ['http://cross.example'] },
            routes: [
              route('/disabled', {
                per_filter_config: { 'envoy.filters.http.csrf': { filter_enabled: percent(0) } },
              }),
              route('/shadow', {
                per_filter_config: {
                  'proxy.filters.http.csrf': { filter_enabled: percent(0), shadow_enabled: percent(100) },
                },
              }),
              route('/additional', {
                typed_per_filter_config: {
                  'envoy.filters.http.csrf': {
                    '@type': CSRF_TYPE,
                    filter_enabled: percent(100),
                    additional_origins: [{ suffix: '.trusted.example' }],
                  },
                },
              }),
              route('/'),
            ],
          },
        ],
      },
      http_filters: [
        { name: 'envoy.filters.http.cors' },
        { name: 'envoy.filters.http.csrf', config: { filter_enabled: percent(100) } },
        { name: 'envoy.filters.http.router' },
      ],
    },
    [{ raw: { name: 'backend', connect_timeout: '1s' }, addresses: [`127.0.0.1:${upstream.port}`] }],
  );
  self = `127.0.0.1:${proxy.port}`;
});

after(async () => {
  await proxy.close();
  upstream.server.close();
});

const stat = (name: string) => proxy.counter(`http.ingress.csrf.${name}`);

describe('CSRF filter', () => {
  it('refuses a POST from another origin with 403 Invalid origin, never reaching the upstream', async () => {
    const before = upstream.seen.length;
    const invalid = stat('request_invalid');
    const a = await send(proxy.port, 'POST', '/form', { origin: 'http://evil.example' }, 'x=1');
    assert.equal(a.status, 403);
    assert.equal(a.body, 'Invalid origin');
    assert.equal(upstream.seen.length, before);
    assert.equal(stat('request_invalid'), invalid + 1);
  });

  it('passes a POST, PUT or DELETE whose Origin (else Referer) is the request host', async () => {
    const valid = stat('request_valid');
    for (const method of ['POST', 'PUT', 'DELETE']) {
      const a = await send(proxy.port, method, '/form', { origin: `http://${self}` });
      assert.equal(a.status, 200, method);
    }
    const referred = await send(proxy.port, 'POST', '/form', { referer: `https://${self}/page?q=1` });
    assert.equal(referred.status, 200);
    assert.equal(stat('request_valid'), valid + 4);
  });

  it('refuses a POST with no source origin at all, counting it missing and invalid', async () => {
    const missing = stat('missing_source_origin');
    const invalid = stat('request_invalid');
    const a = await send(proxy.port, 'POST', '/form');
    assert.equal(a.status, 403);
    assert.equal(stat('missing_source_origin'), missing + 1);
    assert.equal(stat('request_invalid'), invalid + 1);
  });

  it('leaves GET, HEAD and OPTIONS alone whatever their origin', async () => {
    for (const method of ['GET', 'HEAD', 'OPTIONS']) {
      const a = await send(proxy.port, method, '/form', { origin: 'http://evil.example' });
      assert.equal(a.status, 200, method);
    }
  });

  it('a route turns it off, or to shadow mode, through per_filter_config', async () => {
    assert.equal(
      (await send(proxy.port, 'POST', '/disabled', { origin: 'http://evil.example' })).status,
      200,
    );
    const invalid = stat('request_invalid');
    assert.equal((await send(proxy.port, 'POST', '/shadow', { origin: 'http://evil.example' })).status, 200);
    assert.equal(stat('request_invalid'), invalid + 1, 'shadow mode still counts');
  });

  it('a virtual host overrides the filter for its routes', async () => {
    const a = await send(proxy.port, 'POST', '/form', {
      host: 'lenient.example',
      origin: 'http://evil.example',
    });
    assert.equal(a.status, 200);
  });

  it('typed_per_filter_config adds origins a route accepts besides its own host', async () => {
    const ok = await send(proxy.port, 'POST', '/additional', { origin: 'https://app.trusted.example' });
    assert.equal(ok.status, 200);
    const refused = await send(proxy.port, 'POST', '/additional', { origin: 'https://trusted.example.evil' });
    assert.equal(refused.status, 403);
  });

  it('refuses an upgrading POST from another origin too, before any tunnel opens', async () => {
    const before = upstream.seen.length;
    const out = await rawExchange(
      proxy.port,
      'POST /ws HTTP/1.1\r\nHost: x\r\nConnection: upgrade\r\nUpgrade: websocket\r\nOrigin: http://evil.example\r\nContent-Length: 0\r\n\r\n',
    );
    assert.match(out, /^HTTP\/1.1 403 /);
    assert.match(out, /Invalid origin$/);
    assert.equal(upstream.seen.length, before);
  });

  it('a refusal passes the CORS filter before it in the chain, which marks it for an allowed origin', async () => {
    const a = await send(proxy.port, 'POST', '/form', { origin: 'http://cross.example' });
    assert.equal(a.status, 403);
    assert.equal(a.headers['access-control-allow-origin'], 'http://cross.example');
  });
});

describe('per-route filter configs', () => {
  const routes = (perFilter: Record<string, unknown>) => ({
    virtual_hosts: [
      {
        name: 'v',
        domains: ['*'],
        routes: [{ match: { prefix: '/' }, route: { cluster: 'c' }, ...perFilter }],
      },
    ],
  });
  const errors = (perFilter: Record<string, unknown>) =>
    findingsOf((report) => compileLoadedRoutes(routes(perFilter), report)).join('\n');

  it('refuses filters without per-route config here, unknown filters and both maps at once', () => {
    assert.match(
      errors({ per_filter_config: { 'envoy.router': {} } }),
      /per-route config of envoy.filters.http.router/,
    );
    assert.match(errors({ per_filter_config: { 'envoy.nope': {} } }), /'envoy.nope' is not an HTTP filter/);
    assert.match(
      errors({
        per_filter_config: { 'envoy.csrf': { filter_enabled: percent(0) } },
        typed_per_filter_config: { 'envoy.csrf': { '@type': CSRF_TYPE, filter_enabled: percent(0) } },
      }),
      /only one of typed_per_filter_config or per_filter_config/,
    );
  });

  it('checks a CSRF override as the filter message, naming the field', () => {
    assert.match(
      errors({ per_filter_config: { 'envoy.csrf': { shadow_enabled: percent(1) } } }),
      /per_filter_config\["envoy\.csrf"\]\.filter_enabled: required field missing/,
    );
    assert.match(
      errors({ per_filter_config: { 'envoy.csrf': { filter_enabled: percent(0), bogus: 1 } } }),
      /unknown field 'bogus'/,
    );
    assert.match(
      errors({ per_filter_config: { 'envoy.cors': { allow_origin: ['x'] } } }),
      /per_filter_config\["envoy\.cors"\].*unknown field 'allow_origin'/,
    );
  });
});
