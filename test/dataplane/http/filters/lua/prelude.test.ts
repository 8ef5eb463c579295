/**
 * The reference's handle API beyond headers and bodies (prelude.ts, utilities.ts), in the real
 * `proxy` process on two workers: setBytes() on a whole body and on bodyChunks() pieces (the
 * reference docs' example), base64Escape(), timestamps, signature checks, httpCall()'s options
 * table, clearRouteCache(), the stream info's names and addresses, respond() with repeated
 * headers; the SSL object's facts over mTLS; and a method the proxy does not have, which is a
 * script error naming it at run time and a warning naming it at --mode validate.
 */
import assert from 'node:assert/strict';
import { generateKeyPairSync, sign, X509Certificate } from 'node:crypto';
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import type { Json, JsonObject } from '../../../../../events/index.js';
import { Report } from '../../../../../src/bootstrap/report.js';
import { compileLua } from '../../../../../src/dataplane/http/filters/lua/config.js';
import { send } from '../../../../helpers/http-send.js';
import { type ProxyProcess, startProxyProcess } from '../../../../helpers/proxy-process.js';
import { makePki, type TestPki } from '../../../../tls/certs.js';
import { httpsGet, mtlsHcmListener } from '../../../../tls/helpers.js';
import { bootstrapWith } from './helpers.js';

/** Echoes what it got (path, headers, body); `/dup` answers one header twice. */
async function bodyEcho(): Promise<{ server: http.Server; port: number }> {
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      if (req.url === '/dup') res.setHeader('x-dup', ['a', 'b']);
      res.setHeader('content-type', 'application/json');
      res.end(
        JSON.stringify({ path: req.url, headers: req.headers, body: Buffer.concat(chunks).toString() }),
      );
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { server, port: (server.address() as AddressInfo).port };
}

const SCRIPT = String.raw`
local function unhex(s) return (s:gsub('..', function(c) return string.char(tonumber(c, 16)) end)) end
function envoy_on_request(h)
  local hh = h:headers()
  local path = hh:get(':path')
  if path == '/setbody' then
    local body = h:body()
    body:setBytes('replaced ' .. body:length())
  elseif path == '/b64' then
    h:respond({ [':status'] = '200', ['x-multi'] = { 'a', 'b' } }, h:base64Escape('\0\1hi\255'))
  elseif path == '/time' then
    local ms = h:timestamp()
    local us = h:timestampString(EnvoyTimestampResolution.MICROSECOND)
    h:respond({ [':status'] = '200' }, math.type(ms) .. ' ' .. ms .. ' ' .. us .. ' ' .. h:timestampString())
  elseif path == '/verify' then
    local key, sig, data = unhex(hh:get('x-key')), unhex(hh:get('x-sig')), hh:get('x-data')
    local pub = h:importPublicKey(key, #key)
    local ok, err = h:verifySignature(hh:get('x-hash'), pub, sig, #sig, data, #data)
    h:respond({ [':status'] = ok and '200' or '401' }, err or 'verified')
  elseif path == '/call-options' then
    local headers, body = h:httpCall('web', { [':method'] = 'GET', [':path'] = '/dup', [':authority'] = 'web' },
      nil, { timeout_ms = 2000, return_duplicate_headers = true })
    local noxff = h:httpCall('web', { [':method'] = 'GET', [':path'] = '/dup', [':authority'] = 'web' },
      nil, { send_xff = false })
    h:respond({ [':status'] = '200', ['x-dup'] = table.concat(headers['x-dup'], '+'),
      ['x-noxff-dup'] = noxff['x-dup'] }, body)
  elseif path == '/bad-option' then
    h:httpCall('web', { [':method'] = 'GET', [':path'] = '/', [':authority'] = 'web' }, nil, { retries = 2 })
  elseif path == '/reroute' then
    hh:replace(':path', '/moved')
    h:clearRouteCache()
  elseif path == '/auto-reroute' then
    hh:replace(':path', '/moved')
  elseif path == '/context' then
    h:respond({ [':status'] = '200' }, h:filterContext().key .. ' ' .. h:filterContext().n)
  elseif path == '/info' then
    local si = h:streamInfo()
    h:respond({ [':status'] = '200' }, table.concat({ si:routeName(), si:downstreamDirectLocalAddress(),
      si:downstreamLocalAddress(), '[' .. si:virtualClusterName() .. ']', tostring(si:filterState():get('x')),
      '[' .. si:requestedServerName() .. ']' }, ' '))
  elseif path == '/absent' then
    h:setUpstreamOverrideHost('127.0.0.1', true)
    hh:add('x-reached', 'yes')
  end
end
function envoy_on_response(h)
  if h:headers():get('x-chunked-reply') == nil then return end
  local last
  for chunk in h:bodyChunks() do
    chunk:setBytes('')
    last = chunk
  end
  last:setBytes('<html><b>Not Found<b></html>')
end
`;

/** The example of the reference's docs for bodyChunks(): the response's route adds the header it keys on. */
const ROUTES: Json[] = [
  {
    match: { prefix: '/context' },
    route: { cluster: 'web' },
    typed_per_filter_config: {
      'envoy.filters.http.lua': {
        '@type': 'type.googleapis.com/envoy.extensions.filters.http.lua.v3.LuaPerRoute',
        filter_context: { key: 'from-the-route', n: 2 },
      },
    },
  },
  {
    name: 'chunked',
    match: { prefix: '/chunked' },
    route: { cluster: 'web' },
    response_headers_to_add: [{ header: { key: 'x-chunked-reply', value: '1' } }],
  },
  { match: { prefix: '/moved' }, direct_response: { status: 200, body: { inline_string: 'moved' } } },
  { name: 'the-default', match: { prefix: '/' }, route: { cluster: 'web' } },
];

describe('the Lua handle API on two workers', () => {
  let upstream: Awaited<ReturnType<typeof bodyEcho>>;
  let proxy: ProxyProcess;
  let port: number;

  before(async () => {
    upstream = await bodyEcho();
    const lua = {
      name: 'envoy.filters.http.lua',
      typed_config: {
        '@type': 'type.googleapis.com/envoy.extensions.filters.http.lua.v3.Lua',
        inline_code: SCRIPT,
      },
    };
    // A second filter that changes the path without routing again, and counts its errors apart.
    const keeping = {
      name: 'keeping',
      typed_config: {
        '@type': 'type.googleapis.com/envoy.extensions.filters.http.lua.v3.Lua',
        clear_route_cache: false,
        stat_prefix: 'keeping',
        default_source_code: {
          inline_string: `function envoy_on_request(h)
            if h:headers():get(':path') == '/kept' then h:headers():replace(':path', '/moved') end
            if h:headers():get(':path') == '/keeping-error' then error('kept apart') end
          end`,
        },
      },
    };
    proxy = await startProxyProcess(
      bootstrapWith([lua, keeping], ROUTES, upstream.port),
      ['--concurrency', '2'],
      30_000,
    );
    port = await proxy.listenerPort('lua');
  });

  after(async () => {
    await proxy?.stop();
    upstream?.server.close();
  });

  it('setBytes() on body() replaces the request body the upstream gets, with its new length', async () => {
    const res = await send(port, 'POST', '/setbody', {}, 'x'.repeat(100_000));
    assert.equal(res.status, 200, res.body);
    const seen = JSON.parse(res.body) as { body: string; headers: Record<string, string> };
    assert.equal(seen.body, 'replaced 100000');
    assert.equal(seen.headers['content-length'], String('replaced 100000'.length));
  });

  it("setBytes() on each bodyChunks() piece rewrites the response, as the reference's docs example", async () => {
    const res = await send(port, 'GET', '/chunked');
    assert.equal(res.status, 200);
    assert.equal(res.body, '<html><b>Not Found<b></html>');
    assert.equal(res.headers['content-length'], String(res.body.length));
  });

  it('base64Escape() encodes bytes; respond() sends each value of a header given as a table', async () => {
    const res = await send(port, 'GET', '/b64');
    assert.equal(res.body, Buffer.from([0, 1, 0x68, 0x69, 0xff]).toString('base64'));
    assert.equal(res.headers['x-multi'], 'a, b');
  });

  it('timestamp() is integer milliseconds; timestampString() microseconds or milliseconds', async () => {
    const before = Date.now();
    const [type, ms, us, msString] = (await send(port, 'GET', '/time')).body.split(' ');
    assert.equal(type, 'integer');
    assert.ok(Number(ms) >= before && Number(ms) <= Date.now(), `${ms}`);
    assert.match(us ?? '', /^\d{16}$/);
    assert.ok(Math.abs(Number(us) / 1000 - Number(ms)) < 5000, `${us} against ${ms}`);
    assert.match(msString ?? '', /^\d{13}$/);
  });

  it('importPublicKey() and verifySignature() check an RSA and an EC signature; a wrong one or an unknown hash fails', async () => {
    const data = 'hello';
    for (const kind of ['rsa', 'ec'] as const) {
      const { publicKey, privateKey } =
        kind === 'rsa'
          ? generateKeyPairSync('rsa', { modulusLength: 2048 })
          : generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
      const key = publicKey.export({ format: 'der', type: 'spki' }).toString('hex');
      const sig = sign('sha256', Buffer.from(data), privateKey).toString('hex');
      const ask = (headers: Record<string, string>) =>
        send(port, 'GET', '/verify', {
          'x-key': key,
          'x-sig': sig,
          'x-data': data,
          'x-hash': 'SHA256',
          ...headers,
        });
      assert.deepEqual(await ask({}).then((r) => [r.status, r.body]), [200, 'verified'], kind);
      assert.deepEqual(await ask({ 'x-data': 'hellO' }).then((r) => [r.status, r.body]), [
        401,
        'Failed to verify digest. Error code: 0',
      ]);
    }
    // An unknown hash is a script error: the request goes on to the upstream without an answer from the script.
    const unknown = await send(port, 'GET', '/verify', {
      'x-key': '00',
      'x-sig': '00',
      'x-data': 'a',
      'x-hash': 'MD5',
    });
    assert.equal(JSON.parse(unknown.body).path, '/verify');
    await until(() => /MD5 is not supported\./.test(proxy.stderr()), 'the unknown hash in the log');
  });

  it("httpCall()'s options table: return_duplicate_headers, send_xff; an unknown option is an error", async () => {
    const res = await send(port, 'GET', '/call-options');
    assert.equal(res.status, 200, res.body);
    assert.equal(res.headers['x-dup'], 'a+b');
    assert.equal(res.headers['x-noxff-dup'], 'b', 'without return_duplicate_headers the last value');
    assert.equal(JSON.parse(res.body).headers['x-forwarded-for'], '127.0.0.1', 'the proxy adds its address');
    const bad = await send(port, 'GET', '/bad-option');
    assert.equal(JSON.parse(bad.body).path, '/bad-option');
    await until(
      () => /http call option retries is not known/.test(proxy.stderr()),
      'the unknown option in the log',
    );
  });

  it('a script that changes the path routes the request again (clearRouteCache(), or by itself unless clear_route_cache is false)', async () => {
    assert.equal((await send(port, 'GET', '/reroute')).body, 'moved');
    assert.equal((await send(port, 'GET', '/auto-reroute')).body, 'moved');
    const kept = await send(port, 'GET', '/kept');
    assert.equal(JSON.parse(kept.body).path, '/moved', 'the route chosen first still sends to the upstream');
  });

  it("filterContext() answers the route's filter_context; stat_prefix counts a filter's errors apart", async () => {
    assert.equal((await send(port, 'GET', '/context')).body, 'from-the-route 2');
    await send(port, 'GET', '/keeping-error');
    await until(() => /kept apart/.test(proxy.stderr()), 'the error in the log');
    const stats = async () => (await proxy.get('/stats?filter=lua\\.')).body;
    const deadline = Date.now() + 10_000;
    let text = await stats();
    while (!/http\.lua\.lua\.keeping\.errors: 1/.test(text) && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 100));
      text = await stats();
    }
    assert.match(text, /http\.lua\.lua\.keeping\.errors: 1/);
  });

  it("streamInfo(): the route's name, the local addresses, no virtual cluster, no filter state, no SNI on plain TCP", async () => {
    const res = await send(port, 'GET', '/info');
    assert.equal(res.body, `the-default 127.0.0.1:${port} 127.0.0.1:${port} [] nil []`);
  });

  it('a method the proxy does not implement is a script error naming it; the request goes on without the script', async () => {
    const res = await send(port, 'GET', '/absent');
    assert.equal(res.status, 200);
    assert.equal(JSON.parse(res.body).headers['x-reached'], undefined);
    await until(
      () => /setUpstreamOverrideHost\(\) is not implemented by this proxy/.test(proxy.stderr()),
      'the refusal in the log',
    );
  });
});

describe('the SSL connection object over mTLS', () => {
  let pki: TestPki;
  let proxy: ProxyProcess;
  let port: number;

  before(async () => {
    pki = makePki();
    const server = pki.leaf('proxy.test', ['DNS:proxy.test', 'URI:spiffe://proxy']);
    const script = `
function envoy_on_request(h)
  local ssl = h:connection():ssl()
  local name = ssl:parsedSubjectPeerCertificate()
  h:respond({ [':status'] = '200' }, table.concat({ tostring(ssl:peerCertificateValidated()),
    ssl:sha256PeerCertificateDigest(), ssl:serialNumberPeerCertificate(), ssl:issuerPeerCertificate(),
    ssl:validFromPeerCertificate(), ssl:expirationPeerCertificate(), ssl:tlsVersion(), ssl:ciphersuiteString(),
    ssl:subjectLocalCertificate(), table.concat(ssl:dnsSansLocalCertificate(), ','),
    table.concat(ssl:uriSanLocalCertificate(), ','), name:commonName(), #name:organizationName(),
    h:streamInfo():requestedServerName(), ssl:urlEncodedPemEncodedPeerCertificate() }, '|'))
end`;
    const bootstrap: JsonObject = {
      static_resources: {
        listeners: [
          mtlsHcmListener('mtls', server, pki.ca, {
            route_config: {
              virtual_hosts: [
                {
                  name: 'all',
                  domains: ['*'],
                  routes: [{ match: { prefix: '/' }, direct_response: { status: 204 } }],
                },
              ],
            },
            http_filters: [
              {
                name: 'envoy.filters.http.lua',
                typed_config: {
                  '@type': 'type.googleapis.com/envoy.extensions.filters.http.lua.v3.Lua',
                  inline_code: script,
                },
              },
              { name: 'envoy.filters.http.router' },
            ],
          }),
        ],
      },
      admin: { address: { socket_address: { address: '127.0.0.1', port_value: 0 } } },
    };
    proxy = await startProxyProcess(bootstrap, ['--concurrency', '2']);
    port = await proxy.listenerPort('mtls');
  });

  after(async () => {
    await proxy?.stop();
    pki?.remove();
  });

  it("answers the peer certificate's facts, the local certificate's names, the version, cipher and SNI", async () => {
    const client = pki.leaf('client-one', ['URI:spiffe://client']);
    const res = await httpsGet(port, {
      servername: 'proxy.test',
      ca: pki.ca.certPem,
      cert: client.certPem,
      key: client.keyPem,
    });
    assert.equal(res.status, 200, proxy.stderr());
    const cert = new X509Certificate(client.certPem);
    const [
      validated,
      digest,
      serial,
      issuer,
      from,
      to,
      version,
      cipher,
      local,
      dns,
      uri,
      cn,
      orgs,
      sni,
      pem,
    ] = res.body.split('|');
    assert.equal(validated, 'true');
    assert.equal(digest, cert.fingerprint256.replaceAll(':', '').toLowerCase());
    assert.equal(serial, cert.serialNumber.toLowerCase());
    assert.equal(issuer, cert.issuer.split('\n').reverse().join(','));
    assert.equal(Number(from), Math.floor(Date.parse(cert.validFrom) / 1000));
    assert.equal(Number(to), Math.floor(Date.parse(cert.validTo) / 1000));
    assert.match(version ?? '', /^TLSv1\.[23]$/);
    assert.notEqual(cipher, '');
    assert.match(local ?? '', /CN=proxy\.test/);
    assert.equal(dns, 'proxy.test');
    assert.equal(uri, 'spiffe://proxy');
    assert.equal(cn, 'client-one');
    assert.equal(orgs, String(cert.subject.split('\n').filter((l) => l.startsWith('O=')).length));
    assert.equal(sni, 'proxy.test');
    assert.equal(decodeURIComponent(pem ?? ''), cert.toString());
  });
});

describe('the compile step and the methods the proxy does not have', () => {
  it('warns naming each one a script calls; a script calling none gets no warning', () => {
    const report = new Report('t');
    compileLua(
      {
        inline_code:
          'function envoy_on_request(h) h:setUpstreamOverrideHost("10.0.0.1") ; h:streamInfo():dynamicTypedMetadata("x") end',
      },
      'f',
      report,
    );
    assert.deepEqual(report.problems, []);
    const warning = report.warningProblems.map((w) => `${w.path}: ${w.message}`).join('\n');
    assert.match(
      warning,
      /^f\.inline_code: the script calls setUpstreamOverrideHost\(\), dynamicTypedMetadata\(\), which this proxy does not implement/,
    );
    const clean = new Report('t');
    compileLua({ inline_code: 'function envoy_on_request(h) h:base64Escape("x") end' }, 'f', clean);
    assert.deepEqual(clean.warningProblems, []);
  });
});

/** Polls until `check` holds (workers' log lines arrive asynchronously). */
async function until(check: () => boolean, what: string): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}
