/**
 * HCM `local_reply_config` over real sockets: the proxy's own replies (400, 404 no route, 503
 * no healthy upstream, and the HTTP/1 codec's own 400 and 431, as the reference's codec replies
 * through the connection manager's sendLocalReply) rewritten by the first matching mapper and formatted by `body_format`,
 * while an upstream's own 503 passes untouched.
 */
import assert from 'node:assert/strict';
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { JsonObject, RawCluster } from '../../../events/config.js';
import { compileHcm } from '../../../src/dataplane/http/hcm-config.js';
import { httpBootstrap } from '../../helpers/bootstraps.js';
import { runProxy } from '../../helpers/cli.js';
import { findingsOf } from '../../helpers/compile.js';
import { rawExchange, startProxy, type TestProxy } from '../../helpers/http-dataplane.js';
import { send } from '../../helpers/http-send.js';
import { startProxyProcess } from '../../helpers/proxy-process.js';

const cluster = (name: string): RawCluster => ({ name, connect_timeout: '1s' }) as RawCluster;

/** The reference docs' example mapper (400 becomes 401 "not allowed" with `foo: bar`), then ours. */
const LOCAL_REPLY_CONFIG: JsonObject = {
  mappers: [
    {
      filter: {
        status_code_filter: {
          comparison: { op: 'EQ', value: { default_value: 400, runtime_key: 'key_b' } },
        },
      },
      headers_to_add: [{ header: { key: 'foo', value: 'bar' }, append: false }],
      status_code: 401,
      body: { inline_string: 'not allowed' },
    },
    {
      // Regression: filters ran with the stream's end unset, so every duration was negative.
      filter: {
        and_filter: {
          filters: [
            { header_filter: { header: { name: 'x-probe', present_match: true } } },
            { duration_filter: { comparison: { op: 'GE', value: { default_value: 0, runtime_key: 'kd' } } } },
          ],
        },
      },
      status_code: 409,
      headers_to_add: [{ header: { key: 'x-duration', value: 'matched' } }],
    },
    {
      filter: {
        or_filter: {
          filters: [
            {
              status_code_filter: {
                comparison: { op: 'EQ', value: { default_value: 404, runtime_key: 'k404' } },
              },
            },
            {
              status_code_filter: {
                comparison: { op: 'EQ', value: { default_value: 503, runtime_key: 'k503' } },
              },
            },
          ],
        },
      },
      status_code: 418,
      headers_to_add: [
        { header: { key: 'x-mapped', value: 'by %PROTOCOL%' } },
        // The reference evaluates these before the status is rewritten: the original code.
        { header: { key: 'x-original-code', value: '%RESPONSE_CODE%' } },
      ],
      body_format_override: {
        json_format: { code: '%RESPONSE_CODE%', message: '%LOCAL_REPLY_BODY%', path: '%REQ(:PATH)%' },
      },
    },
  ],
  body_format: { text_format: 'proxy said [%LOCAL_REPLY_BODY%] with %RESPONSE_CODE%' },
};

describe('local_reply_config', () => {
  let proxy: TestProxy;
  let upstream: http.Server;

  before(async () => {
    upstream = http.createServer((_req, res) => {
      res.writeHead(503, { 'content-type': 'text/plain' });
      res.end('upstream is busy');
    });
    await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
    const upstreamPort = (upstream.address() as AddressInfo).port;
    proxy = await startProxy(
      {
        stat_prefix: 'ingress',
        local_reply_config: LOCAL_REPLY_CONFIG,
        route_config: {
          virtual_hosts: [
            {
              name: 'all',
              domains: ['*'],
              routes: [
                {
                  match: { prefix: '/busy' },
                  route: { cluster: 'busy' },
                  response_headers_to_add: [{ header: { key: 'x-code', value: '%RESPONSE_CODE%' } }],
                },
                { match: { prefix: '/empty' }, route: { cluster: 'empty' } },
                {
                  match: { prefix: '/gone' },
                  direct_response: { status: 410, body: { inline_string: 'gone' } },
                  response_headers_to_add: [{ header: { key: 'x-code', value: '%RESPONSE_CODE%' } }],
                },
              ],
            },
          ],
        },
        http_filters: [{ name: 'envoy.filters.http.router' }],
      },
      [
        { raw: cluster('busy'), addresses: [`127.0.0.1:${upstreamPort}`] },
        { raw: cluster('empty'), addresses: [] },
      ],
    );
  });

  after(async () => {
    upstream.close();
    await proxy?.close();
  });

  it('rewrites a 404 (no route) to the mapper status with its JSON body and header', async () => {
    const got = await send(proxy.port, 'GET', '/nowhere');
    assert.equal(got.status, 418);
    assert.equal(got.headers['content-type'], 'application/json');
    assert.equal(got.headers['x-mapped'], 'by HTTP/1.1');
    assert.equal(got.headers['x-original-code'], '404');
    assert.deepEqual(JSON.parse(got.body), { code: 418, message: '', path: '/nowhere' });
  });

  it('rewrites a 503 (no healthy upstream) the same way, the original body in %LOCAL_REPLY_BODY%', async () => {
    const got = await send(proxy.port, 'GET', '/empty');
    assert.equal(got.status, 418);
    assert.equal(got.headers['x-mapped'], 'by HTTP/1.1');
    assert.equal(got.headers['x-original-code'], '503');
    assert.deepEqual(JSON.parse(got.body), { code: 418, message: 'no healthy upstream', path: '/empty' });
  });

  it("applies the reference docs' example to a 400 (a path with a fragment): 401, 'not allowed', foo: bar", async () => {
    const raw = await rawExchange(proxy.port, 'GET /a#b HTTP/1.1\r\nhost: a\r\n\r\n');
    assert.match(raw, /^HTTP\/1\.1 401 /);
    assert.match(raw, /\r\nfoo: bar\r\n/i);
    // No body_format_override: the config's text format renders the mapper's body.
    assert.match(raw, /\r\n\r\nproxy said \[not allowed\] with 401$/);
  });

  it("rewrites the codec's own 400 (a request it cannot parse), as the reference's codec replies through sendLocalReply", async () => {
    // Regression: the HTTP/1 codec wrote its 400 itself, past local_reply_config.
    const raw = await rawExchange(proxy.port, 'NOT A REQUEST LINE\r\n\r\n');
    assert.match(raw, /^HTTP\/1\.1 401 Unauthorized\r\n/);
    assert.match(raw, /\r\nfoo: bar\r\n/i);
    assert.match(raw, /\r\nconnection: close\r\n/i);
    assert.match(raw, /\r\ncontent-length: 33\r\n/i);
    assert.match(raw, /\r\n\r\nproxy said \[not allowed\] with 401$/);
  });

  it("formats the codec's 431 (headers too large) and an HTTP/1.0 request's 426 with body_format", async () => {
    const big = await rawExchange(
      proxy.port,
      `GET / HTTP/1.1\r\nhost: a\r\nx-big: ${'a'.repeat(70_000)}\r\n\r\n`,
    );
    assert.match(big, /^HTTP\/1\.1 431 /);
    assert.match(big, /\r\n\r\nproxy said \[Request Header Fields Too Large\] with 431$/);
    const old = await rawExchange(proxy.port, 'GET / HTTP/1.0\r\nhost: a\r\n\r\n');
    assert.match(old, /^HTTP\/1\.1 426 /);
    assert.match(old, /\r\n\r\nproxy said \[\] with 426$/);
  });

  it('formats an unmapped local reply (a direct response) with the text body_format', async () => {
    const got = await send(proxy.port, 'GET', '/gone');
    assert.equal(got.status, 410);
    assert.equal(got.headers['content-type'], 'text/plain');
    assert.equal(got.body, 'proxy said [gone] with 410');
    assert.equal(got.headers['x-code'], '410');
  });

  it('matches a duration_filter on the time so far', async () => {
    const got = await send(proxy.port, 'GET', '/nowhere', { 'x-probe': '1' });
    assert.equal(got.status, 409);
    assert.equal(got.headers['x-duration'], 'matched');
    assert.equal(got.body, 'proxy said [] with 409');
  });

  it("leaves an upstream's own 503 alone", async () => {
    const got = await send(proxy.port, 'GET', '/busy');
    assert.equal(got.status, 503);
    assert.equal(got.body, 'upstream is busy');
    assert.equal(got.headers['x-code'], '503');
    assert.equal(got.headers['x-mapped'], undefined);
  });
});

describe('local_reply_config compile', () => {
  const hcm = (localReply: JsonObject): JsonObject => ({
    stat_prefix: 'x',
    route_config: {},
    local_reply_config: localReply,
  });

  it('refuses unknown and unimplemented sub-fields by name', () => {
    const errors = findingsOf((r) =>
      compileHcm(
        hcm({
          mappers: [
            { filter: { not_health_check_filter: {} }, body: { filename: '/etc/body' }, surprise: 1 },
          ],
          body_format: { text_format: 'x', omit_empty_values: true },
        }),
        '',
        r,
      ),
    );
    const text = errors.join('\n');
    assert.match(text, /local_reply_config\.mappers\[0\]\.surprise/);
    assert.match(text, /local_reply_config\.mappers\[0\]\.body\.filename/);
    assert.match(text, /local_reply_config\.body_format\.omit_empty_values/);
  });

  it('refuses a mapper without a filter, a bad status and a bad format command', () => {
    const text = findingsOf((r) =>
      compileHcm(
        hcm({
          mappers: [{ status_code: 99 }],
          body_format: { text_format: '%NOT_A_COMMAND%' },
        }),
        '',
        r,
      ),
    ).join('\n');
    assert.match(text, /local_reply_config\.mappers\[0\]\.filter/);
    assert.match(text, /local_reply_config\.mappers\[0\]\.status_code/);
    assert.match(text, /local_reply_config\.body_format\.text_format/);
  });
});

describe('local_reply_config in the real proxy', () => {
  const bootstrap = (localReply: JsonObject) =>
    httpBootstrap([], {
      stat_prefix: 'ingress',
      local_reply_config: localReply,
      route_config: { virtual_hosts: [{ name: 'all', domains: ['*'], routes: [] }] },
      http_filters: [{ name: 'envoy.filters.http.router' }],
    });

  it('rewrites the 404 of every worker with --concurrency 2', async () => {
    const proxy = await startProxyProcess(bootstrap(LOCAL_REPLY_CONFIG), ['--concurrency', '2']);
    try {
      const port = await proxy.listenerPort('http');
      for (let i = 0; i < 4; i++) {
        const got = await send(port, 'GET', `/none/${i}`);
        assert.equal(got.status, 418);
        assert.deepEqual(JSON.parse(got.body), { code: 418, message: '', path: `/none/${i}` });
      }
    } finally {
      await proxy.stop();
    }
  });

  it("matches the codec's protocol errors by the DPE response flag, on every thread with --concurrency 2", async () => {
    const proxy = await startProxyProcess(
      bootstrap({
        mappers: [
          {
            filter: { response_flag_filter: { flags: ['DPE'] } },
            status_code: 422,
            body: { inline_string: 'unreadable request' },
          },
        ],
      }),
      ['--concurrency', '2'],
    );
    try {
      const port = await proxy.listenerPort('http');
      // Each on its own connection: the kernel spreads them over both threads.
      for (let i = 0; i < 4; i++) {
        const raw = await rawExchange(port, `BAD ${i}\r\n\r\n`);
        assert.match(raw, /^HTTP\/1\.1 422 /);
        assert.match(raw, /\r\n\r\nunreadable request$/);
      }
      // A refused CONNECT is no protocol error: its 403 stays as it was.
      assert.match(
        await rawExchange(port, 'CONNECT a:443 HTTP/1.1\r\nhost: a:443\r\n\r\n'),
        /^HTTP\/1\.1 403 /,
      );
    } finally {
      await proxy.stop();
    }
  });

  it('--mode validate exits 1 naming a refused field', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'local-reply-'));
    try {
      const file = join(dir, 'bootstrap.json');
      writeFileSync(
        file,
        JSON.stringify(bootstrap({ body_format: { text_format: 'x', omit_empty_values: true } })),
      );
      const run = await runProxy(['--mode', 'validate', '-c', file], {}, 60000);
      assert.equal(run.code, 1);
      assert.match(run.stdout + run.stderr, /local_reply_config\.body_format\.omit_empty_values/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
