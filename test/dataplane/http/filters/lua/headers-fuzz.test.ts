/**
 * Client-chosen header bytes through a Lua script, over real sockets: whatever visible bytes a
 * client sends, `get` hands the script exactly those bytes, `replace` and `add` give the
 * upstream exactly what the script wrote, `pairs` sees every header, and nothing the client
 * sends makes the script or the proxy fail. `FUZZ_RUNS` sets the number of requests.
 */
import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import fc from 'fast-check';
import { send } from '../../../../helpers/http-send.js';
import { type ProxyProcess, startProxyProcess } from '../../../../helpers/proxy-process.js';
import { bootstrapWith, echoUpstream } from './helpers.js';

const RUNS = Number(process.env.FUZZ_RUNS ?? 100);

const SCRIPT = `
function envoy_on_request(handle)
  local h = handle:headers()
  local n = 0
  for k, v in pairs(h) do n = n + 1 end
  local value = h:get('x-in') or ''
  h:replace('x-out', value .. '|' .. #value)
  h:add('x-count', tostring(n))
end
`;

let upstream: Awaited<ReturnType<typeof echoUpstream>>;
let proxy: ProxyProcess;
let port: number;

before(async () => {
  upstream = await echoUpstream();
  const lua = {
    name: 'envoy.filters.http.lua',
    typed_config: { '@type': 'type.googleapis.com/envoy.config.filter.http.lua.v2.Lua', inline_code: SCRIPT },
  };
  proxy = await startProxyProcess(
    bootstrapWith([lua], [{ match: { prefix: '/' }, route: { cluster: 'web' } }], upstream.port),
    ['--concurrency', '2'],
    30_000,
  );
  port = await proxy.listenerPort('lua');
});

after(async () => {
  await proxy.stop();
  upstream.server.close();
});

it('hands the script the client header bytes and the upstream the script bytes, for any visible header value', async () => {
  await fc.assert(
    fc.asyncProperty(
      fc.stringMatching(/^[\x21-\x7e][\x20-\x7e]{0,40}[\x21-\x7e]$/),
      fc.uniqueArray(fc.stringMatching(/^x-[a-z0-9-]{1,12}$/), { maxLength: 6 }),
      async (value, extra) => {
        const headers: Record<string, string> = { 'x-in': value };
        for (const name of extra) if (name !== 'x-in' && name !== 'x-out') headers[name] = name;
        const res = await send(port, 'GET', '/', headers);
        assert.equal(res.status, 200, res.body);
        const seen = JSON.parse(res.body).headers as Record<string, string>;
        assert.equal(seen['x-out'], `${value}|${value.length}`);
        // pairs: the four pseudo headers, then every header the proxy forwards.
        assert.ok(Number(seen['x-count']) >= 4 + Object.keys(headers).length);
      },
    ),
    { numRuns: RUNS, seed: 29 },
  );
  assert.doesNotMatch(proxy.stderr(), /script log/);
});
