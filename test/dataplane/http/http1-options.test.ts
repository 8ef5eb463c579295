/**
 * Root cause (issue 25): the connection manager's `http_protocol_options` was refused and
 * `accept_http_10` advisory, so HTTP/1.0 requests were always served (the reference refuses them
 * with 426 unless `accept_http_10`, and only then fills a missing Host from
 * `default_host_for_http_10`); the v3 `stream_error_on_invalid_http_message` and its
 * `override_stream_error_on_invalid_http_message` were unknown fields, and a request the
 * connection manager answered 400 left its HTTP/1 connection open, where the reference closes it
 * unless told otherwise.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { compileHcm } from '../../../src/dataplane/http/hcm-config.js';
import { http2StreamError } from '../../../src/dataplane/http/http1-options.js';
import { findingsOf } from '../../helpers/compile.js';
import { hcmConfig, rawExchange, type TestProxy, withTestProxy } from '../../helpers/http-dataplane.js';
import { type RecordingOrigin, recordingOrigin } from '../../helpers/recording-origin.js';

let origin: RecordingOrigin;

before(async () => {
  origin = await recordingOrigin();
});

after(() => origin.close());

async function withProxy(extras: Record<string, unknown>, body: (proxy: TestProxy) => Promise<void>) {
  await withTestProxy(
    { ...hcmConfig('b'), ...extras },
    [{ raw: { name: 'b', connect_timeout: '1s' }, addresses: [`127.0.0.1:${origin.port}`] }],
    (proxy) => {
      origin.reset();
      return body(proxy);
    },
  );
}

const hostOf = (i: number) => origin.requests[i]?.lines.find((l) => /^host:/i.test(l));

describe('accept_http_10', () => {
  test('by default an HTTP/1.0 request is answered 426 Upgrade Required and never reaches the upstream', async () => {
    await withProxy({}, async (proxy) => {
      const out = await rawExchange(proxy.port, 'GET / HTTP/1.0\r\nHost: x\r\n\r\n', 2000);
      assert.match(out, /^HTTP\/1\.1 426 Upgrade Required\r\n/);
      assert.match(out, /\r\nconnection: close\r\n/i);
      assert.equal(origin.requests.length, 0);
      assert.equal(proxy.counter('http.ingress.downstream_rq_4xx'), 1);
    });
  });

  test('an HTTP/1.0 upgrade request is refused the same way, not tunnelled', async () => {
    await withProxy({ upgrade_configs: [{ upgrade_type: 'websocket' }] }, async (proxy) => {
      const out = await rawExchange(
        proxy.port,
        'GET / HTTP/1.0\r\nHost: x\r\nConnection: upgrade\r\nUpgrade: websocket\r\n\r\n',
        2000,
      );
      assert.match(out, /^HTTP\/1\.1 426 /);
      assert.equal(origin.requests.length, 0);
    });
  });

  test('with it, HTTP/1.0 is answered in HTTP/1.0, kept alive when asked, and a missing Host is the default', async () => {
    const options = { accept_http_10: true, default_host_for_http_10: 'Default.Test' };
    await withProxy({ http_protocol_options: options }, async (proxy) => {
      const out = await rawExchange(
        proxy.port,
        'GET /a HTTP/1.0\r\nConnection: keep-alive\r\n\r\nGET /b HTTP/1.0\r\nHost: given.test\r\n\r\n',
        2000,
      );
      const heads = out.split(/(?=HTTP\/1\.0 )/);
      assert.equal(heads.length, 2, out);
      assert.match(heads[0] as string, /^HTTP\/1\.0 200 OK\r\n[\s\S]*connection: keep-alive\r\n/i);
      assert.match(heads[1] as string, /^HTTP\/1\.0 200 OK\r\n[\s\S]*connection: close\r\n/i);
      assert.equal(hostOf(0), 'host: default.test');
      assert.equal(hostOf(1), 'host: given.test');
    });
  });

  test('with it, Expect: 100-continue is ignored in HTTP/1.0 and answered with 100 Continue in HTTP/1.1', async () => {
    // Root cause: the codec sent `HTTP/1.1 100 Continue` whatever the request's version, and an
    // HTTP/1.0 client knows no interim answer (RFC 9110 10.1.1: ignore the expectation; nginx does).
    await withProxy({ http_protocol_options: { accept_http_10: true } }, async (proxy) => {
      const post = (version: string) =>
        rawExchange(
          proxy.port,
          `POST /e HTTP/${version}\r\nHost: a.test\r\nExpect: 100-continue\r\nContent-Length: 2\r\nConnection: close\r\n\r\nhi`,
          2000,
        );
      assert.match(await post('1.0'), /^HTTP\/1\.0 200 OK\r\n/);
      assert.match(await post('1.1'), /^HTTP\/1\.1 100 Continue\r\n\r\nHTTP\/1\.1 200 OK\r\n/);
      assert.deepEqual(
        origin.requests.map((r) => r.body),
        ['hi', 'hi'],
      );
    });
  });

  test('with it but no default Host, an HTTP/1.0 request without Host is 400 and the connection closes', async () => {
    await withProxy({ http_protocol_options: { accept_http_10: true } }, async (proxy) => {
      const out = await rawExchange(proxy.port, 'GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n', 2000);
      assert.match(out, /^HTTP\/1\.0 400 Bad Request\r\n[\s\S]*connection: close\r\n/i);
      assert.equal(origin.requests.length, 0);
    });
  });
});

describe('stream_error_on_invalid_http_message', () => {
  // A field with an underscore under REJECT_REQUEST is a 400 from the connection manager,
  // after a head the codec parsed whole: the connection could go on.
  const bad = 'GET /bad HTTP/1.1\r\nHost: x\r\nx_y: 1\r\n\r\n';
  const good = 'GET /good HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n';
  const reject = { common_http_protocol_options: { headers_with_underscores_action: 'REJECT_REQUEST' } };

  test('by default the 400 closes the HTTP/1 connection: the next request is never read', async () => {
    await withProxy(reject, async (proxy) => {
      const out = await rawExchange(proxy.port, bad + good, 2000);
      assert.match(out, /^HTTP\/1\.1 400 Bad Request\r\n[\s\S]*connection: close\r\n/i);
      assert.doesNotMatch(out, /200 OK/);
      assert.equal(origin.requests.length, 0);
    });
  });

  test('set, the connection goes on after the 400', async () => {
    await withProxy({ ...reject, stream_error_on_invalid_http_message: true }, async (proxy) => {
      const out = await rawExchange(proxy.port, bad + good, 2000);
      assert.match(out, /^HTTP\/1\.1 400 Bad Request\r\n/);
      assert.match(out, /HTTP\/1\.1 200 OK\r\n/);
      assert.deepEqual(
        origin.requests.map((r) => r.lines[0]),
        ['GET /good HTTP/1.1'],
      );
    });
  });

  test("http_protocol_options' override wins over the connection manager's field", async () => {
    const extras = {
      ...reject,
      stream_error_on_invalid_http_message: true,
      http_protocol_options: { override_stream_error_on_invalid_http_message: false },
    };
    await withProxy(extras, async (proxy) => {
      const out = await rawExchange(proxy.port, bad + good, 2000);
      assert.match(out, /^HTTP\/1\.1 400 [\s\S]*connection: close\r\n/i);
      assert.equal(origin.requests.length, 0);
    });
  });

  test('HTTP/2: the override, else the connection manager field, else the deprecated one decides', () => {
    assert.equal(http2StreamError({}, undefined), false);
    assert.equal(http2StreamError({ stream_error_on_invalid_http_messaging: true }, undefined), true);
    assert.equal(http2StreamError({ stream_error_on_invalid_http_messaging: true }, false), false);
    assert.equal(http2StreamError({ override_stream_error_on_invalid_http_message: true }, false), true);
    assert.equal(http2StreamError({ override_stream_error_on_invalid_http_message: false }, true), false);
  });
});

describe('request targets', () => {
  test('allow_absolute_url: false leaves an absolute-form target as the path, answered 404', async () => {
    await withProxy({ http_protocol_options: { allow_absolute_url: false } }, async (proxy) => {
      const out = await rawExchange(
        proxy.port,
        'GET http://x/a HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n',
        2000,
      );
      assert.match(out, /^HTTP\/1\.1 404 /);
      assert.equal(proxy.counter('http.ingress.downstream_rq_non_relative_path'), 1);
      assert.equal(origin.requests.length, 0);
    });
  });

  test('by default an absolute-form target is served, its authority the Host', async () => {
    await withProxy({}, async (proxy) => {
      const out = await rawExchange(
        proxy.port,
        'GET http://abs.test/a HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n',
        2000,
      );
      assert.match(out, /^HTTP\/1\.1 200 /);
      assert.equal(hostOf(0), 'host: abs.test');
    });
  });

  // Root cause: an absolute-form target was read as `https?://` alike, so `GET https://...` on a
  // plain connection was served; the reference refuses it ("https in the clear"), as a client
  // asking for TLS must not be answered over cleartext as if it had it.
  test('an https:// absolute-form target on a plain connection is 400, never forwarded', async () => {
    await withProxy({}, async (proxy) => {
      const before = origin.requests.length;
      for (const target of ['https://abs.test/a', 'HTTPS://abs.test/a']) {
        const out = await rawExchange(
          proxy.port,
          `GET ${target} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`,
          2000,
        );
        assert.match(out, /^HTTP\/1\.1 400 /);
      }
      assert.equal(origin.requests.length, before);
    });
  });

  test('the asterisk form (OPTIONS *) is 404, not forwarded', async () => {
    await withProxy({}, async (proxy) => {
      const out = await rawExchange(
        proxy.port,
        'OPTIONS * HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n',
        2000,
      );
      assert.match(out, /^HTTP\/1\.1 404 /);
      assert.equal(origin.requests.length, 0);
    });
  });
});

describe('compile', () => {
  test('the v3 fields are read, and the refused ones named', () => {
    const errors = findingsOf((report) =>
      compileHcm(
        {
          stat_prefix: 'x',
          route_config: {},
          stream_error_on_invalid_http_message: true,
          http_protocol_options: { accept_http_10: true, enable_trailers: true },
          http2_protocol_options: { override_stream_error_on_invalid_http_message: true },
        },
        'hcm',
        report,
      ),
    );
    assert.deepEqual(errors, [
      'test: hcm.http_protocol_options.enable_trailers: enable_trailers (HTTP/1.1 trailers) is not implemented (not supported by this build)',
    ]);
  });
});
