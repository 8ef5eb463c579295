/**
 * The Lua filter over real sockets, in the real `proxy` process on two workers (each its own
 * Lua state): the reference's Lua example unchanged but for its addresses, then the handle API,
 * per-route overrides, and scripts that fail, loop or hoard memory, which must cost their own
 * request only. Each request goes on a fresh connection, so both workers answer some.
 */
import assert from 'node:assert/strict';
import * as http2 from 'node:http2';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Json, JsonObject } from '../../../../../events/index.js';
import { type Dump, load, root } from '../../../../helpers/bootstrap.js';
import { send } from '../../../../helpers/http-send.js';
import { type ProxyProcess, startProxyProcess } from '../../../../helpers/proxy-process.js';
import { bootstrapWith, echoUpstream, trailersUpstream } from './helpers.js';

const EXAMPLE_DIR = join(root, 'fixtures/reference-examples-2020/examples/lua');

let upstream: Awaited<ReturnType<typeof echoUpstream>>;

before(async () => {
  upstream = await echoUpstream();
});

after(() => {
  upstream.server.close();
});

/** Polls until `check` holds (workers report stats asynchronously). */
async function until(check: () => Promise<boolean> | boolean, what: string): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe("the reference's Lua example (examples/lua/envoy.yaml of v1.16)", () => {
  let proxy: ProxyProcess;
  let port: number;

  before(async () => {
    const loaded = load({ configPath: join(EXAMPLE_DIR, 'envoy.yaml') });
    assert.ok(loaded.ok, loaded.ok ? '' : loaded.errors.join('\n'));
    // Its addresses adapted: the listener on a free port, web_service on the echo upstream.
    const b = structuredClone(loaded.bootstrap) as Dump;
    b.admin.address.socket_address = { address: '127.0.0.1', port_value: 0 };
    b.static_resources.listeners[0].address.socket_address = { address: '127.0.0.1', port_value: 0 };
    b.static_resources.clusters[0].load_assignment.endpoints[0].lb_endpoints[0].endpoint.address.socket_address =
      { address: '127.0.0.1', port_value: upstream.port };
    // Its image copies lib/mylibrary.lua under the working directory; LUA_PATH says where it is here.
    proxy = await startProxyProcess(b as JsonObject, ['--concurrency', '2'], 30_000, {
      LUA_PATH: `${EXAMPLE_DIR}/?.lua;;`,
    });
    port = await proxy.listenerPort('main');
  });

  after(async () => {
    await proxy.stop();
  });

  it('adds foo: bar (from the required library) to each request and response-body-size to each response, on both workers', async () => {
    for (let i = 0; i < 6; i++) {
      const res = await send(port, 'GET', '/');
      assert.equal(res.status, 200, res.body);
      assert.equal(JSON.parse(res.body).headers.foo, 'bar');
      assert.equal(res.headers['response-body-size'], String(Buffer.byteLength(res.body)));
    }
    assert.doesNotMatch(proxy.stderr(), /script log/);
  });
});

const SCRIPT = `
calls = 0
function envoy_on_request(request_handle)
  calls = calls + 1
  local h = request_handle:headers()
  local path = h:get(':path')
  if path == '/deny' then
    request_handle:respond({ [':status'] = '403', ['x-why'] = 'lua' }, 'denied by lua')
  end
  if path == '/error' then error('boom on purpose') end
  if path == '/loop' then while true do end end
  if path == '/trap' then while true do pcall(function() while true do end end) end end
  if path == '/hoard' then local s = string.rep('x', 1e8) end
  if path == '/exit' then os.exit(1) end
  if path == '/echo' then
    local body = request_handle:body()
    local n = body and body:length() or -1
    local head = body and body:getBytes(0, math.min(n, 5)) or ''
    local pieces = 0
    for chunk in request_handle:bodyChunks() do pieces = pieces + chunk:length() end
    request_handle:streamInfo():dynamicMetadata():set('lua.test', 'length', n)
    request_handle:respond({ [':status'] = '200', ['x-length'] = tostring(n), ['x-pieces'] = tostring(pieces),
      ['x-meta'] = tostring(request_handle:streamInfo():dynamicMetadata():get('lua.test').length) }, head)
  end
  if path == '/call' or path == '/call-dead' then
    local cluster = path == '/call' and 'web' or 'dead'
    local headers, body = request_handle:httpCall(cluster, { [':method'] = 'POST', [':path'] = '/from-lua',
      [':authority'] = 'lua', ['x-from'] = 'script' }, 'hello', 2000)
    request_handle:respond({ [':status'] = '200', ['x-call-status'] = headers[':status'] }, body)
  end
  if path == '/call-nowhere' then request_handle:httpCall('nowhere', { [':method'] = 'GET', [':path'] = '/', [':authority'] = 'x' }, nil, 0) end
  if path == '/badrange' then request_handle:body():getBytes(5, 100) end
  local seen = {}
  for k, v in pairs(h) do seen[#seen + 1] = k end
  h:add('x-seen', table.concat(seen, ','))
  h:add('x-method', h:get(':method'))
  h:replace('x-replace', 'new')
  h:remove('x-remove')
  h:add('x-protocol', request_handle:streamInfo():protocol())
  h:add('x-ssl', tostring(request_handle:connection():ssl() == nil))
  h:add('x-calls', tostring(calls))
  h:add('x-version', _VERSION)
  request_handle:logInfo('saw ' .. path)
  if path == '/rewrite' then h:replace(':path', '/rewritten') end
end
function envoy_on_response(response_handle)
  local h = response_handle:headers()
  local body = response_handle:body()
  h:add('x-response-length', tostring(body and body:length() or -1))
  local t = response_handle:trailers()
  h:add('x-trailer-seen', t and t:get('x-upstream-trailer') or 'none')
  h:add('x-status-seen', h:get(':status'))
  h:add('x-upstream-seen', h:get('x-upstream') or 'none')
  h:remove('x-upstream')
end
`;

describe('the Lua filter: the handle API, per-route overrides, failures', () => {
  let proxy: ProxyProcess;
  let port: number;
  let h2: Awaited<ReturnType<typeof trailersUpstream>>;

  before(async () => {
    const lua = {
      name: 'envoy.lua',
      typed_config: {
        '@type': 'type.googleapis.com/envoy.extensions.filters.http.lua.v3.Lua',
        inline_code: SCRIPT,
        source_codes: {
          'other.lua': {
            inline_string: `function envoy_on_request(h) h:headers():add('x-other', 'yes') end`,
          },
        },
      },
    };
    // v3's default_source_code; and a filter with no default script, which runs only the
    // `source_codes` entry a route names.
    const fromDefaultSource = {
      name: 'envoy.filters.http.lua',
      typed_config: {
        '@type': 'type.googleapis.com/envoy.extensions.filters.http.lua.v3.Lua',
        default_source_code: {
          inline_string: `function envoy_on_request(h) h:headers():add('x-default-source', 'yes') end`,
        },
      },
    };
    const withoutDefault = {
      name: 'envoy.filters.http.lua',
      typed_config: {
        '@type': 'type.googleapis.com/envoy.extensions.filters.http.lua.v3.Lua',
        source_codes: {
          'other.lua': {
            inline_string: `function envoy_on_request(h) h:headers():add('x-third', 'yes') end`,
          },
        },
      },
    };
    const perRoute = (config: Json) => ({
      'envoy.filters.http.lua': {
        '@type': 'type.googleapis.com/envoy.extensions.filters.http.lua.v3.LuaPerRoute',
        ...(config as JsonObject),
      },
    });
    const routes: Json[] = [
      {
        match: { prefix: '/off' },
        route: { cluster: 'web' },
        typed_per_filter_config: perRoute({ disabled: true }),
      },
      {
        match: { prefix: '/other' },
        route: { cluster: 'web' },
        typed_per_filter_config: perRoute({ name: 'other.lua' }),
      },
      { match: { prefix: '/trailers' }, route: { cluster: 'h2' } },
      { match: { prefix: '/' }, route: { cluster: 'web' } },
    ];
    h2 = await trailersUpstream();
    proxy = await startProxyProcess(
      bootstrapWith([lua, fromDefaultSource, withoutDefault], routes, upstream.port, h2.port),
      ['--concurrency', '2'],
      30_000,
    );
    port = await proxy.listenerPort('lua');
  });

  after(async () => {
    await proxy.stop();
    h2.server.close();
  });

  it('reads, adds, replaces and removes request headers, iterates them with pairs', async () => {
    const res = await send(port, 'POST', '/api?q=1', { 'x-replace': 'old', 'x-remove': 'gone' });
    assert.equal(res.status, 200, res.body);
    const seen = JSON.parse(res.body).headers as Record<string, string>;
    assert.equal(seen['x-method'], 'POST');
    assert.equal(seen['x-replace'], 'new');
    assert.equal(seen['x-remove'], undefined);
    assert.match(seen['x-seen'] ?? '', /^:authority,:path,:method,:scheme,.*x-replace.*x-remove/);
    assert.equal(seen['x-protocol'], 'HTTP/1.1');
    assert.equal(seen['x-ssl'], 'true');
    assert.equal(seen['x-version'], 'Lua 5.4');
    // The response flow: :status and the upstream's headers, one removed.
    assert.equal(res.headers['x-status-seen'], '200');
    assert.equal(res.headers['x-upstream-seen'], 'one');
    assert.equal(res.headers['x-upstream'], undefined);
  });

  it('hands the script the whole request body (body, getBytes, bodyChunks), the response body, and dynamic metadata', async () => {
    const payload = 'x'.repeat(300_000);
    const res = await send(port, 'POST', '/echo', {}, payload);
    assert.equal(res.status, 200, res.body);
    assert.equal(res.headers['x-length'], String(payload.length));
    assert.equal(res.headers['x-pieces'], String(payload.length));
    assert.equal(res.headers['x-meta'], String(payload.length));
    assert.equal(res.body, 'xxxxx');
    const empty = await send(port, 'GET', '/echo');
    assert.equal(empty.headers['x-length'], '-1', 'no body: body() is nil');
    // The response flow's body(): the upstream's whole answer, before it goes downstream.
    const upstreamAnswer = await send(port, 'POST', '/api', {}, 'abc');
    assert.equal(upstreamAnswer.headers['x-response-length'], String(Buffer.byteLength(upstreamAnswer.body)));
    assert.equal(JSON.parse(upstreamAnswer.body).method, 'POST');
  });

  it('httpCall() sends to a cluster and resumes the script with the answer; a failed call is a 503 upstream failure', async () => {
    const res = await send(port, 'GET', '/call');
    assert.equal(res.status, 200, res.body);
    assert.equal(res.headers['x-call-status'], '200');
    const seen = JSON.parse(res.body);
    assert.equal(seen.path, '/from-lua');
    assert.equal(seen.method, 'POST');
    assert.equal(seen.headers['x-from'], 'script');
    const dead = await send(port, 'GET', '/call-dead');
    assert.equal(dead.headers['x-call-status'], '503');
    assert.equal(dead.body, 'upstream failure');
    const nowhere = await send(port, 'GET', '/call-nowhere');
    assert.equal(nowhere.status, 200, 'a script error: the request goes on');
    await until(async () => /http call cluster invalid/.test(proxy.stderr()), 'the cluster error');
  });

  it('trailers() waits for the end of the response and reads its trailers; nil without any', async () => {
    const session = http2.connect(`http://127.0.0.1:${port}`);
    try {
      const ask = (path: string) =>
        new Promise<http2.IncomingHttpHeaders>((resolve, reject) => {
          const req = session.request({ ':method': 'GET', ':path': path, te: 'trailers' });
          let head: http2.IncomingHttpHeaders = {};
          req.on('response', (h) => {
            head = h;
          });
          req.resume();
          req.on('end', () => resolve(head));
          req.on('error', reject);
          req.end();
        });
      assert.equal((await ask('/trailers'))['x-trailer-seen'], 'from-upstream');
      assert.equal((await ask('/api'))['x-trailer-seen'], 'none');
    } finally {
      session.close();
    }
  });

  it('a bad getBytes range is a script error naming the rule', async () => {
    const res = await send(port, 'POST', '/badrange', {}, 'abc');
    assert.equal(res.status, 200);
    await until(async () => /index\/length must be >= 0/.test(proxy.stderr()), 'the range error');
  });

  it('keeps globals per worker state across requests', async () => {
    let most = 0;
    for (let i = 0; i < 8; i++) {
      const res = await send(port, 'GET', '/count');
      most = Math.max(most, Number(JSON.parse(res.body).headers['x-calls']));
    }
    // Eight requests over two workers: some state has served at least four.
    assert.ok(most >= 4, `most calls seen by one state: ${most}`);
  });

  it('rewrites :path before the request goes upstream', async () => {
    const res = await send(port, 'GET', '/rewrite');
    assert.equal(JSON.parse(res.body).path, '/rewritten');
  });

  it('answers from respond() with its status, headers and body; the upstream never sees it', async () => {
    const res = await send(port, 'GET', '/deny');
    assert.equal(res.status, 403);
    assert.equal(res.headers['x-why'], 'lua');
    assert.equal(res.body, 'denied by lua');
  });

  it('runs no script on a route with disabled, and the named source_codes entry on a route naming it', async () => {
    const off = JSON.parse((await send(port, 'GET', '/off')).body).headers;
    assert.equal(off['x-method'], undefined);
    const other = JSON.parse((await send(port, 'GET', '/other')).body).headers;
    assert.equal(other['x-other'], 'yes');
    assert.equal(other['x-method'], undefined);
  });

  it("runs default_source_code as the default script; a filter without one runs only a route's named script", async () => {
    const plain = JSON.parse((await send(port, 'GET', '/plain')).body).headers;
    assert.equal(plain['x-default-source'], 'yes');
    assert.equal(plain['x-third'], undefined, 'no default script: nothing runs');
    const named = JSON.parse((await send(port, 'GET', '/other')).body).headers;
    assert.equal(named['x-third'], 'yes');
  });

  it('a script error is logged and counted; the request goes on without the script, as the reference', async () => {
    const res = await send(port, 'GET', '/error');
    assert.equal(res.status, 200);
    assert.equal(JSON.parse(res.body).headers['x-method'], undefined);
    await until(async () => /boom on purpose/.test(proxy.stderr()), 'the error in the log');
    await until(
      async () => /http\.lua\.lua\.errors: [1-9]/.test((await proxy.get('/stats?filter=lua\\.errors')).body),
      'lua.errors counted',
    );
  });

  it('stops a script that loops (even one that catches the stop with pcall) or hoards memory; the worker serves on', async () => {
    for (const path of ['/loop', '/trap', '/hoard']) {
      const res = await send(port, 'GET', path);
      assert.equal(res.status, 200, path);
      const after = await send(port, 'GET', '/api');
      assert.equal(JSON.parse(after.body).headers['x-method'], 'GET', `the state works after ${path}`);
    }
    // Workers' log lines reach the stderr asynchronously.
    await until(() => /script ran past its time limit/.test(proxy.stderr()), 'the time limit in the log');
    await until(() => /not enough memory/.test(proxy.stderr()), 'the memory cap in the log');
  });

  it('has no os.exit: a script cannot end the proxy', async () => {
    const res = await send(port, 'GET', '/exit');
    assert.equal(res.status, 200);
    assert.equal(proxy.child.exitCode, null);
    assert.equal((await send(port, 'GET', '/api')).status, 200);
  });
});
