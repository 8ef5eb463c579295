/**
 * What the Lua filter costs a request, in-process: the filter objects the data plane makes
 * (src/dataplane/http/filters/lua/), fed one request head and one response head at a time, with
 * no sockets, so the figure is the filter alone. Scripts: none (`envoy_on_request` absent), the
 * reference's example (a header from a required library, the response body's length), and one
 * that reads every header with `pairs`. Also the heap one Lua state holds. Run alone:
 * `npm run bench -- lua`.
 */

import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import bunyan from 'bunyan';
import { Report } from '../src/bootstrap/report.js';
import { newStreamInfo } from '../src/dataplane/access-log/stream-info.js';
import type { HttpRequest } from '../src/dataplane/codec/request.js';
import type { FilterStream, StreamFilter } from '../src/dataplane/http/filters/api.js';
import { Script } from '../src/dataplane/http/filters/lua/filter.js';
import { luaFactory } from '../src/dataplane/http/filters/lua/index.js';
import { TapRegistry } from '../src/dataplane/http/tap-registry.js';
import { StatsStore } from '../src/stats/store.js';
import type { BenchRow } from './types.js';

const REQUESTS = 20_000;

const SCRIPTS: Record<string, string> = {
  'no envoy_on_request': 'x = 1',
  "the reference's example": `
local mylibrary = require("lib.mylibrary")
function envoy_on_request(request_handle)
  request_handle:headers():add("foo", mylibrary.foobar())
end
function envoy_on_response(response_handle)
  body_size = response_handle:body():length()
  response_handle:headers():add("response-body-size", tostring(body_size))
end`,
  'pairs over the request headers': `
function envoy_on_request(handle)
  local n = 0
  for k, v in pairs(handle:headers()) do n = n + #v end
  handle:headers():add('x-n', tostring(n))
end`,
};

function request(): HttpRequest {
  return {
    method: 'GET',
    path: '/api/items?page=2',
    authority: 'example.com',
    scheme: 'http',
    headers: ['user-agent', 'bench/1.0', 'accept', '*/*', 'x-request-id', 'f0e1d2c3', 'cookie', 'a=b; c=d'],
    protocol: 'HTTP/1.1',
    remoteIp: '127.0.0.1',
    remotePort: 40000,
    localAddress: '127.0.0.1:10000',
    contentLength: 0,
    hasBody: false,
  };
}

/** The smallest stream a filter callback needs; the chain's iteration is not what is measured. */
function stream(req: HttpRequest): FilterStream {
  return {
    req,
    info: newStreamInfo(req, '127.0.0.1:40000', '127.0.0.1:10000'),
    route: null,
    routeCluster: 'web',
    ended: false,
    decodingBuffer: null,
    encodingBuffer: null,
    perRoute: () => undefined,
    clearRouteCache: () => {},
    replaceBuffered: () => {},
    continueDecoding: () => {},
    continueEncoding: () => {},
    sendLocalReply: () => {},
    responseLength: -1,
    localReply: false,
    responseStatus: 0,
  };
}

const BODY = Buffer.from('{"items":[1,2,3],"page":2}');

/** One request through the filter: request head, response head, response body. */
function exchange(filter: StreamFilter): void {
  const s = stream(request());
  filter.decodeHeaders(s);
  filter.encodeHeaders?.(200, ['content-type', 'application/json'], s);
  filter.encodeData?.(s, BODY, true);
  filter.onDestroy?.();
}

export async function benchLua(): Promise<BenchRow[]> {
  const dir = mkdtempSync(join(tmpdir(), 'bench-lua-'));
  const path = process.env.LUA_PATH;
  process.env.LUA_PATH = `${dir}/?.lua;;`;
  try {
    mkdirSync(join(dir, 'lib'));
    writeFileSync(join(dir, 'lib/mylibrary.lua'), 'M = {}\nfunction M.foobar() return "bar" end\nreturn M\n');
    const rows: BenchRow[] = [];
    for (const [name, code] of Object.entries(SCRIPTS)) {
      const config = luaFactory.compile({ inline_code: code }, 'lua', new Report('bench'));
      const make = luaFactory.start?.(config, {
        scope: new StatsStore().scope('http.bench.'),
        runtime: () => undefined,
        log: () => bunyan.createLogger({ name: 'bench', level: 'fatal' }),
        clusters: { get: () => undefined },
        localCluster: '',
        listenerName: 'bench',
        taps: new TapRegistry(),
        onClose: () => {},
      });
      if (make === undefined) throw new Error('the Lua factory starts no filter');
      const lua = () => make() as StreamFilter;
      // The state loads in the background; the first request waits for it.
      await new Promise<void>((resolve) => {
        const s = stream(request());
        const filter = lua();
        const probe = { ...s, continueDecoding: () => resolve() };
        if (filter.decodeHeaders(probe) === 0) resolve();
      });
      for (let i = 0; i < 2000; i++) exchange(lua());
      const cpu = process.cpuUsage();
      const started = performance.now();
      for (let i = 0; i < REQUESTS; i++) exchange(lua());
      const wall = performance.now() - started;
      const used = process.cpuUsage(cpu);
      rows.push({
        name: `lua: ${name}, per request`,
        value: (used.user + used.system) / REQUESTS,
        unit: 'µs CPU',
        note: `${REQUESTS.toLocaleString('en-US')} requests in-process (request head, response head and body), no sockets; wall ${((wall * 1000) / REQUESTS).toFixed(1)} µs`,
      });
    }
    const script = new Script('x = 1', 'inline_code', {
      log: bunyan.createLogger({ name: 'bench', level: 'fatal' }),
      errors: new StatsStore().scope('http.bench.').counter('errors'),
      clusters: { get: () => undefined },
    });
    await script.ready;
    rows.push({
      name: 'lua: one state with the handle API loaded, Lua heap',
      value: Math.round((script.vm?.memoryUsed() ?? 0) / 1024),
      unit: 'KiB',
      note: 'one state per script per worker; the WebAssembly module (~11 MB) once per worker thread',
    });
    return rows;
  } finally {
    if (path === undefined) delete process.env.LUA_PATH;
    else process.env.LUA_PATH = path;
    rmSync(dir, { recursive: true, force: true });
  }
}
