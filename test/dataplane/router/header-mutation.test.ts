import assert from 'node:assert/strict';
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import { hostname } from 'node:os';
import { after, before, describe, it } from 'node:test';
import type { JsonObject, RawCluster } from '../../../events/config.js';
import { Report } from '../../../src/bootstrap/report.js';
import {
  newStreamInfo,
  setDynamicMetadata,
  setFilterState,
} from '../../../src/dataplane/access-log/stream-info.js';
import {
  applyHeaderMutations,
  compileHeaderTemplate,
} from '../../../src/dataplane/router/header-mutation.js';
import { compileRouteTable } from '../../../src/dataplane/router/table.js';
import { until } from '../../helpers/dataplane.js';
import { rawExchange, startProxy, type TestProxy } from '../../helpers/http-dataplane.js';
import { type RecordingOrigin, recordingOrigin } from '../../helpers/recording-origin.js';

/** An upstream answering every request with the headers it received as JSON, holding `/hold` ones until released. */
async function echoUpstream(): Promise<{ port: number; held: Array<() => void>; close(): void }> {
  const held: Array<() => void> = [];
  const server = http.createServer((req, res) => {
    const answer = () => {
      res.setHeader('x-upstream-secret', 'drop me');
      res.setHeader('x-upstream-kept', 'kept');
      res.end(JSON.stringify(req.headers));
    };
    if (req.url?.startsWith('/hold')) held.push(answer);
    else answer();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as AddressInfo).port,
    held,
    close: () => server.close(),
  };
}

function get(
  port: number,
  path: string,
  headers: Record<string, string> = {},
): Promise<{ status: number; headers: http.IncomingHttpHeaders; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.get({ port, host: '127.0.0.1', path, headers, agent: false, timeout: 5000 }, (res) => {
      let body = '';
      res.on('data', (c) => {
        body += c;
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
    });
    req.on('timeout', () => req.destroy(new Error('timed out')));
    req.on('error', reject);
  });
}

const add = (key: string, value: string, append?: boolean) => ({
  header: { key, value },
  ...(append === undefined ? {} : { append }),
});

const cluster: RawCluster = {
  name: 'c',
  connect_timeout: '1s',
  circuit_breakers: {
    thresholds: [
      { max_requests: 1, max_pending_requests: 100, max_connections: 100 },
      { priority: 'HIGH', max_requests: 2, max_pending_requests: 100, max_connections: 100 },
    ],
  },
};

describe('route header mutations and priority', () => {
  let upstream: Awaited<ReturnType<typeof echoUpstream>>;
  let proxy: TestProxy;

  before(async () => {
    upstream = await echoUpstream();
    proxy = await startProxy(
      {
        stat_prefix: 'ingress',
        route_config: {
          name: 'local',
          request_headers_to_add: [add('x-level', 'table', false), add('x-table', 'global')],
          response_headers_to_add: [add('x-resp-table', '%PROTOCOL%')],
          virtual_hosts: [
            {
              name: 'all',
              domains: ['*'],
              request_headers_to_add: [add('x-level', 'vhost'), add('x-vh', 'v')],
              request_headers_to_remove: ['x-strip-me'],
              routes: [
                {
                  match: { prefix: '/direct' },
                  direct_response: { status: 200, body: { inline_string: 'direct' } },
                  response_headers_to_add: [add('x-direct', 'yes')],
                },
                { match: { prefix: '/hold-high' }, route: { cluster: 'c', priority: 'HIGH' } },
                { match: { prefix: '/hold' }, route: { cluster: 'c' } },
                {
                  match: { prefix: '/' },
                  route: { cluster: 'c' },
                  request_headers_to_add: [
                    add('x-level', 'route'),
                    add('x-client', '%DOWNSTREAM_REMOTE_ADDRESS_WITHOUT_PORT%'),
                    add('x-local', '%DOWNSTREAM_LOCAL_ADDRESS%'),
                    add('x-version', '%UPSTREAM_METADATA(["proxy.lb", "version"])%'),
                    add('x-missing', '%UPSTREAM_METADATA(["proxy.lb", "nothing"])%'),
                    add('x-start', '%START_TIME(%Y)%'),
                    add('x-protocol', '%PROTOCOL%'),
                    add('x-host', '%HOSTNAME%'),
                    add('x-literal', '100%% sure %REQ(x-in)%'),
                  ],
                  response_headers_to_add: [
                    add('x-upstream-version', '%UPSTREAM_METADATA(["proxy.lb", "version"])%'),
                    add('x-upstream-kept', 'replaced', false),
                  ],
                  response_headers_to_remove: ['x-upstream-secret'],
                },
              ],
            },
          ],
        },
        http_filters: [{ name: 'proxy.filters.http.router' }],
      },
      [{ raw: cluster, addresses: [`127.0.0.1:${upstream.port}`] }],
    );
    const host = proxy.clusters.get('c')?.hosts[0];
    assert.ok(host);
    host.state = { ...host.state, metadata: { 'proxy.lb': { version: 'v2' } } };
  });

  after(async () => {
    await proxy.close();
    upstream.close();
  });

  it('adds and removes request headers at route, virtual host and table level, variables evaluated', async () => {
    const res = await get(proxy.port, '/x', { 'x-strip-me': '1', 'x-in': 'from client' });
    assert.equal(res.status, 200);
    const seen = JSON.parse(res.body) as Record<string, string>;
    assert.equal(seen['x-strip-me'], undefined);
    // Route first, then the virtual host appends, then the table's append: false replaces both.
    assert.equal(seen['x-level'], 'table');
    assert.equal(seen['x-table'], 'global');
    assert.equal(seen['x-vh'], 'v');
    assert.equal(seen['x-client'], '127.0.0.1');
    assert.equal(seen['x-local'], `127.0.0.1:${proxy.port}`);
    assert.equal(seen['x-version'], 'v2');
    assert.equal(seen['x-missing'], undefined, 'an empty value is not added');
    assert.equal(seen['x-start'], String(new Date().getUTCFullYear()));
    assert.equal(seen['x-protocol'], 'HTTP/1.1');
    assert.equal(seen['x-host'], hostname());
    assert.equal(seen['x-literal'], '100% sure from client');
  });

  it('mutates the response: route removals and replacements, table additions, upstream metadata', async () => {
    const res = await get(proxy.port, '/x');
    assert.equal(res.headers['x-upstream-secret'], undefined);
    assert.equal(res.headers['x-upstream-kept'], 'replaced');
    assert.equal(res.headers['x-upstream-version'], 'v2');
    assert.equal(res.headers['x-resp-table'], 'HTTP/1.1');
  });

  it('adds response headers to a direct response', async () => {
    const res = await get(proxy.port, '/direct');
    assert.equal(res.body, 'direct');
    assert.equal(res.headers['x-direct'], 'yes');
    assert.equal(res.headers['x-resp-table'], 'HTTP/1.1');
  });

  it('priority HIGH counts against the HIGH thresholds, DEFAULT against its own', async () => {
    const first = get(proxy.port, '/hold/1');
    await until(() => upstream.held.length === 1, 5000, 'the first DEFAULT request held');
    const overflow = await get(proxy.port, '/hold/2');
    assert.equal(overflow.status, 503, 'DEFAULT max_requests 1 is full');
    const high = [get(proxy.port, '/hold-high/1'), get(proxy.port, '/hold-high/2')];
    await until(() => upstream.held.length === 3, 5000, 'two HIGH requests held beside the DEFAULT one');
    assert.equal(proxy.gauge('cluster.c.circuit_breakers.high.rq_open'), 1);
    assert.equal(proxy.gauge('cluster.c.circuit_breakers.default.rq_open'), 1);
    const highOverflow = await get(proxy.port, '/hold-high/3');
    assert.equal(highOverflow.status, 503, 'HIGH max_requests 2 is full');
    for (const release of upstream.held.splice(0)) release();
    const done = await Promise.all([first, ...high]);
    assert.deepEqual(
      done.map((r) => r.status),
      [200, 200, 200],
    );
    assert.equal(proxy.counter('cluster.c.upstream_rq_pending_overflow'), 2);
    await until(
      () => proxy.gauge('cluster.c.circuit_breakers.high.rq_open') === 0,
      5000,
      'HIGH breaker closed',
    );
  });
});

describe('header mutation config errors', () => {
  const compile = (level: Record<string, unknown>) => {
    const report = new Report('test');
    compileRouteTable(
      {
        virtual_hosts: [
          {
            name: 'v',
            domains: ['*'],
            routes: [{ match: { prefix: '/' }, route: { cluster: 'c' }, ...level }],
          },
        ],
      },
      'rc',
      report,
    );
    return report;
  };
  const messages = (r: Report) => r.problems.map((f) => `${f.path}: ${f.message}`).join('\n');

  it('an unknown variable is an error at the value', () => {
    const r = compile({ request_headers_to_add: [add('x', '%NOT_A_VARIABLE%')] });
    assert.match(
      messages(r),
      /rc\.virtual_hosts\[0\]\.routes\[0\]\.request_headers_to_add\[0\]\.header\.value: .*NOT_A_VARIABLE/,
    );
  });

  it('an unterminated variable and a malformed metadata path are errors', () => {
    assert.match(messages(compile({ request_headers_to_add: [add('x', '%PROTOCOL')] })), /no closing/);
    assert.match(
      messages(compile({ response_headers_to_add: [add('x', '%UPSTREAM_METADATA(proxy.lb)%')] })),
      /JSON list/,
    );
  });

  it('TLS variables are refused as not supported, pseudo-headers and host cannot be changed', () => {
    assert.match(
      messages(compile({ request_headers_to_add: [add('x', '%DOWNSTREAM_PEER_SUBJECT%')] })),
      /not supported/,
    );
    assert.match(messages(compile({ request_headers_to_remove: [':path'] })), /cannot be added or removed/);
    assert.match(
      messages(compile({ request_headers_to_add: [add('Host', 'x')] })),
      /cannot be added or removed/,
    );
  });

  it("reads v3's append_action: append or overwrite; refuses the other two and both fields at once", () => {
    const routeOf = (option: JsonObject) => {
      const report = new Report('test');
      const table = compileRouteTable(
        {
          virtual_hosts: [
            {
              name: 'v',
              domains: ['*'],
              routes: [{ match: { prefix: '/' }, route: { cluster: 'c' }, request_headers_to_add: [option] }],
            },
          ],
        },
        'rc',
        report,
      );
      return { report, add: table.any?.routes[0]?.headers?.requestAdd[0] };
    };
    const header = { key: 'x-a', value: 'v' };
    const overwrite = routeOf({ header, append_action: 'OVERWRITE_IF_EXISTS_OR_ADD' });
    assert.equal(messages(overwrite.report), '');
    assert.equal(overwrite.add?.append, false);
    assert.equal(routeOf({ header, append_action: 'APPEND_IF_EXISTS_OR_ADD' }).add?.append, true);
    assert.match(
      messages(routeOf({ header, append_action: 'ADD_IF_ABSENT' }).report),
      /request_headers_to_add\[0\]\.append_action: append_action ADD_IF_ABSENT is not implemented/,
    );
    assert.match(
      messages(routeOf({ header, append: false, append_action: 'OVERWRITE_IF_EXISTS_OR_ADD' }).report),
      /request_headers_to_add\[0\]: only one of append and append_action/,
    );
  });

  it('a valid level compiles without findings', () => {
    const r = compile({
      request_headers_to_add: [add('x-a', '%START_TIME% %DOWNSTREAM_LOCAL_PORT%', false)],
      response_headers_to_remove: ['x-b'],
    });
    assert.equal(messages(r), '');
  });
});

describe('header variables reading what filters recorded', () => {
  it('%DYNAMIC_METADATA(["ns", "key"])% and %PER_REQUEST_STATE(key)% read the stream record; unset is not added', () => {
    const info = newStreamInfo(null, '', '');
    const meta = compileHeaderTemplate('%DYNAMIC_METADATA(["envoy.filters.http.lua", "user", "id"])%', 'h');
    const state = compileHeaderTemplate('v=%PER_REQUEST_STATE(auth.user)%', 'h');
    assert.equal(meta({ info, host: null }), '');
    setDynamicMetadata(info, 'envoy.filters.http.lua', { user: { id: 42 } });
    setFilterState(info, 'auth.user', 'alice');
    assert.equal(meta({ info, host: null }), '42');
    assert.equal(state({ info, host: null }), 'v=alice');
    assert.throws(() => compileHeaderTemplate('%DYNAMIC_METADATA(ns)%', 'h'), /JSON list/);
    assert.throws(() => compileHeaderTemplate('%PER_REQUEST_STATE()%', 'h'), /needs a filter state name/);
  });
});

// Root cause (issue 25): header names and values from config were taken as written, so a value
// with CRLF (in headers_to_add, a redirect's host or path, a rewrite, server_name or via, from a
// file or a management server) was written into HTTP/1 heads as extra fields or a whole extra
// response; and a per-request value rendered from metadata could carry one the same way.
describe('header injection from config and metadata', () => {
  const compile = (route: Record<string, unknown>, table: Record<string, unknown> = {}) => {
    const report = new Report('test');
    compileRouteTable(
      {
        virtual_hosts: [{ name: 'v', domains: ['*'], routes: [{ match: { prefix: '/' }, ...route }] }],
        ...table,
      },
      'rc',
      report,
    );
    return report.problems.map((f) => `${f.path}: ${f.message}`);
  };
  const CRLF = 'a\r\nset-cookie: x=1';

  it('CR, LF or NUL in a configured value, redirect or rewrite is an error at its field', () => {
    const cluster = { cluster: 'c' };
    for (const [route, field] of [
      [
        { route: cluster, response_headers_to_add: [add('x', CRLF)] },
        'routes[0].response_headers_to_add[0].header.value',
      ],
      [
        { route: cluster, request_headers_to_add: [add('x', 'a\0b')] },
        'routes[0].request_headers_to_add[0].header.value',
      ],
      [{ redirect: { host_redirect: CRLF } }, 'routes[0].redirect.host_redirect'],
      [{ redirect: { path_redirect: `/${CRLF}` } }, 'routes[0].redirect.path_redirect'],
      [{ redirect: { prefix_rewrite: `/${CRLF}` } }, 'routes[0].redirect.prefix_rewrite'],
      [{ route: { ...cluster, prefix_rewrite: `/${CRLF}` } }, 'routes[0].route.prefix_rewrite'],
      [{ route: { ...cluster, host_rewrite: CRLF } }, 'routes[0].route.host_rewrite'],
    ] as const) {
      const problems = compile(route as Record<string, unknown>);
      assert.equal(problems.length, 1, JSON.stringify(route));
      assert.match(
        problems[0] as string,
        new RegExp(`virtual_hosts\\[0\\]\\.${field.replace(/[[\].]/g, '\\$&')}: .*CR, LF or NUL`),
      );
    }
  });

  it('a header name that is not a token is an error', () => {
    const [problem] = compile({ route: { cluster: 'c' }, request_headers_to_add: [add('x y', 'v')] });
    assert.match(problem as string, /header\.key: "x y" is not a header name/);
  });

  it('a value rendered from metadata with CR or LF is not added', async () => {
    const report = new Report('test');
    const table = compileRouteTable(
      {
        virtual_hosts: [
          {
            name: 'v',
            domains: ['*'],
            routes: [
              {
                match: { prefix: '/' },
                direct_response: { status: 200 },
                response_headers_to_add: [
                  add('x-meta', '%DYNAMIC_METADATA(["ns", "v"])%'),
                  add('x-fixed', 'ok'),
                ],
              },
            ],
          },
        ],
      },
      'rc',
      report,
    );
    assert.equal(report.failed, false);
    const mutation = table.any?.routes[0]?.headers;
    assert.ok(mutation);
    const info = newStreamInfo(null, '', '');
    setDynamicMetadata(info, 'ns', { v: CRLF });
    const headers: string[] = [];
    applyHeaderMutations(headers, [mutation], true, { info, host: null });
    assert.deepEqual(headers, ['x-fixed', 'ok']);
  });
});

describe('text past ASCII in config goes out as its UTF-8 bytes', () => {
  // Root cause: config strings are text while the data plane writes heads as latin1 (a
  // character a byte): `€` went out as the byte 0xAC and `é` as 0xE9, where the reference
  // sends the UTF-8 bytes its config holds.
  let origin: RecordingOrigin;
  let proxy: TestProxy;
  const TEXT = 'naïve €';

  before(async () => {
    origin = await recordingOrigin();
    proxy = await startProxy(
      {
        stat_prefix: 'ingress',
        server_name: 'café',
        route_config: {
          virtual_hosts: [
            {
              name: 'all',
              domains: ['*'],
              routes: [
                {
                  match: { prefix: '/' },
                  route: { cluster: 'o', prefix_rewrite: '/résumé/' },
                  request_headers_to_add: [add('x-text', TEXT)],
                  response_headers_to_add: [add('x-text', TEXT)],
                },
              ],
            },
          ],
        },
        http_filters: [{ name: 'proxy.filters.http.router' }],
      },
      [{ raw: { name: 'o' }, addresses: [`127.0.0.1:${origin.port}`] }],
    );
  });

  after(async () => {
    await proxy.close();
    origin.close();
  });

  it('in added request and response headers, a rewritten path and the server header', async () => {
    const answer = Buffer.from(
      await rawExchange(proxy.port, 'GET /a HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n', 3000),
      'latin1',
    );
    const bytes = (text: string) => Buffer.from(text, 'utf8');
    assert.ok(answer.includes(bytes(`x-text: ${TEXT}\r\n`)), answer.toString('latin1'));
    assert.ok(answer.includes(bytes('server: café\r\n')), answer.toString('latin1'));
    const [req] = origin.requests;
    assert.ok(req);
    const lines = req.lines.map((l) => Buffer.from(l, 'latin1'));
    assert.deepEqual(lines[0], bytes('GET /résumé/a HTTP/1.1'));
    assert.ok(
      lines.some((l) => l.equals(bytes(`x-text: ${TEXT}`))),
      req.lines.join('\n'),
    );
  });
});
