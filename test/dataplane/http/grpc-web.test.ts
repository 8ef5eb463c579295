/**
 * The grpc_web filter over real sockets: gRPC-Web and gRPC-Web-text clients on HTTP/1.1
 * through the proxy to a real gRPC server (grpc-js) over the cluster's HTTP/2 pool. The
 * filter on its own, chunk by chunk: test/dataplane/http/filters/grpc/web.test.ts.
 */
import assert from 'node:assert/strict';
import * as http2 from 'node:http2';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { closedPort, echoServer, frame, frames, post } from '../../helpers/grpc-upstream.js';
import { startProxy, type TestProxy } from '../../helpers/http-dataplane.js';

let echo: Awaited<ReturnType<typeof echoServer>>;
let proxy: TestProxy;
/** A raw HTTP/2 upstream that records the request heads it gets and answers trailers-only OK. */
let recorder: http2.Http2Server;
const heads: http2.IncomingHttpHeaders[] = [];

before(async () => {
  echo = await echoServer();
  recorder = http2.createServer();
  recorder.on('stream', (stream, headers) => {
    heads.push(headers);
    stream.resume();
    stream.on('end', () => stream.respond({ ':status': 200, 'grpc-status': '0' }, { endStream: true }));
  });
  await new Promise<void>((resolve) => recorder.listen(0, '127.0.0.1', resolve));
  const h2 = (name: string, port: number) => ({
    raw: { name, connect_timeout: '1s', http2_protocol_options: {} },
    addresses: [`127.0.0.1:${port}`],
  });
  proxy = await startProxy(
    {
      stat_prefix: 'web',
      route_config: {
        virtual_hosts: [
          {
            name: 'all',
            domains: ['*'],
            routes: [
              { match: { prefix: '/down.' }, route: { cluster: 'down' } },
              { match: { prefix: '/seen.' }, route: { cluster: 'recorder' } },
              { match: { prefix: '/' }, route: { cluster: 'echo' } },
            ],
          },
        ],
      },
      http_filters: [{ name: 'envoy.filters.http.grpc_web' }, { name: 'envoy.filters.http.router' }],
    },
    [
      h2('echo', echo.port),
      h2('down', await closedPort()),
      h2('recorder', (recorder.address() as AddressInfo).port),
    ],
  );
});

after(async () => {
  await proxy.close();
  echo.close();
  recorder.close();
});

/** The trailers frame's `name:value` lines as an object. */
function trailerLines(payload: Buffer): Record<string, string> {
  const out: Record<string, string> = {};
  for (const line of payload.toString('latin1').split('\r\n')) {
    if (line === '') continue;
    const colon = line.indexOf(':');
    out[line.slice(0, colon)] = line.slice(colon + 1);
  }
  return out;
}

/** Decodes a -text body: base64 segments, each padded on its own. */
function decodeText(body: Buffer): Buffer {
  const segments = body.toString('latin1').match(/[^=]+=*/g) ?? [];
  return Buffer.concat(segments.map((s) => Buffer.from(s, 'base64')));
}

const stat = (rest: string) => proxy.counter(`cluster.echo.grpc-web.test.Echo.Echo.${rest}`);

describe('grpc_web', () => {
  it('a binary call: the reply frame, then the trailers as a 0x80 frame, content type grpc-web+proto', async () => {
    const total = stat('total');
    const a = await post(
      proxy.port,
      '/test.Echo/Echo',
      { 'content-type': 'application/grpc-web+proto', 'x-user-agent': 'grpc-web-javascript/0.1' },
      frame('hi'),
    );
    assert.equal(a.status, 200);
    assert.equal(a.headers['content-type'], 'application/grpc-web+proto');
    const [reply, trailers, ...rest] = frames(a.body);
    assert.equal(reply?.flag, 0);
    assert.equal(reply?.payload.toString(), 'echo:hi');
    assert.equal(trailers?.flag, 0x80);
    assert.equal(trailerLines(trailers?.payload as Buffer)['grpc-status'], '0');
    assert.equal(rest.length, 0);
    assert.equal(stat('total'), total + 1);
    assert.equal(stat('success') >= 1, true);
  });

  it('sends the call upstream as gRPC: content type application/grpc, te: trailers, grpc-accept-encoding', async () => {
    const text = frame('m').toString('base64');
    await post(proxy.port, '/seen.Svc/Call', { 'content-type': 'application/grpc-web-text' }, text);
    const head = heads.at(-1);
    assert.equal(head?.['content-type'], 'application/grpc');
    assert.equal(head?.te, 'trailers');
    assert.equal(head?.['grpc-accept-encoding'], 'identity,deflate,gzip');
    assert.equal(head?.['content-length'], undefined, 'a text body shrinks when decoded');
  });

  it('a text call: base64 request decoded, reply and trailer frames each base64-encoded', async () => {
    const a = await post(
      proxy.port,
      '/test.Echo/Echo',
      { 'content-type': 'application/grpc-web-text', accept: 'application/grpc-web-text' },
      frame('text me').toString('base64'),
    );
    assert.equal(a.status, 200);
    assert.equal(a.headers['content-type'], 'application/grpc-web-text+proto');
    assert.match(a.body.toString('latin1'), /^[A-Za-z0-9+/=]+$/);
    const [reply, trailers] = frames(decodeText(a.body));
    assert.equal(reply?.payload.toString(), 'echo:text me');
    assert.equal(trailers?.flag, 0x80);
    assert.equal(trailerLines(trailers?.payload as Buffer)['grpc-status'], '0');
  });

  it('a text request with a binary answer when the client does not accept text', async () => {
    const a = await post(
      proxy.port,
      '/test.Echo/Echo',
      { 'content-type': 'application/grpc-web-text+proto' },
      frame('b').toString('base64'),
    );
    assert.equal(a.headers['content-type'], 'application/grpc-web+proto');
    assert.equal(frames(a.body)[0]?.payload.toString(), 'echo:b');
  });

  it('a gRPC error comes back in the head (trailers-only), the content type translated', async () => {
    const failure = stat('failure');
    const a = await post(
      proxy.port,
      '/test.Echo/Echo',
      { 'content-type': 'application/grpc-web' },
      frame('missing'),
    );
    assert.equal(a.status, 200);
    assert.equal(a.headers['content-type'], 'application/grpc-web+proto');
    assert.equal(a.headers['grpc-status'], '5');
    assert.equal(a.body.length, 0);
    assert.equal(stat('failure'), failure + 1);
  });

  it('an upstream that is down: grpc-status 14 in the head of a grpc-web answer', async () => {
    const a = await post(
      proxy.port,
      '/down.Svc/Call',
      { 'content-type': 'application/grpc-web' },
      frame('x'),
    );
    assert.equal(a.status, 200);
    assert.equal(a.headers['content-type'], 'application/grpc-web+proto');
    assert.equal(a.headers['grpc-status'], '14');
  });

  it('a text body that is not base64 is refused before the upstream answers (gRPC INTERNAL)', async () => {
    const calls = echo.seen.length;
    const a = await post(
      proxy.port,
      '/test.Echo/Echo',
      { 'content-type': 'application/grpc-web-text' },
      '!!!!',
    );
    assert.equal(a.headers['grpc-status'], '13');
    assert.equal(a.headers['grpc-message'], 'Bad gRPC-web request, invalid base64 data.');
    assert.equal(echo.seen.length, calls);
  });
});
