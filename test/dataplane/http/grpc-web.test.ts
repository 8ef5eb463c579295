/**
 * The grpc_web filter over real sockets: gRPC-Web and gRPC-Web-text clients on HTTP/1.1
 * through the proxy to a real gRPC server (grpc-js) over the cluster's HTTP/2 pool; and the
 * filter's text decoding on its own, chunk by chunk.
 */
import assert from 'node:assert/strict';
import type { IncomingHttpHeaders } from 'node:http';
import * as http2 from 'node:http2';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { grpcStreamStarter } from '../../../src/dataplane/http/grpc-filters.js';
import { grpcWebStream } from '../../../src/dataplane/http/grpc-web.js';
import type { HttpRequest, ResponseSink } from '../../../src/dataplane/codec/request.js';
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

describe('grpc_web text decoding', () => {
  const request = (type: string): HttpRequest => ({
    method: 'POST',
    path: '/a.B/C',
    authority: 'x',
    scheme: 'http',
    headers: ['content-type', type, 'content-length', '12'],
    protocol: 'HTTP/1.1',
    remoteIp: '127.0.0.1',
    contentLength: 12,
    hasBody: true,
  });
  const sink: ResponseSink = {
    headersSent: false,
    writeHead() {},
    writeData: () => true,
    end() {},
    reset() {},
  };

  it('decodes base64 split anywhere, across padded segments, and refuses a short tail at the end', () => {
    const req = request('application/grpc-web-text');
    const s = grpcWebStream(req, sink, () => null);
    assert.ok(s);
    assert.equal(req.contentLength, -1);
    assert.deepEqual(req.headers, [
      'content-type',
      'application/grpc',
      'te',
      'trailers',
      'grpc-accept-encoding',
      'identity,deflate,gzip',
    ]);
    const text = `${frame('one').toString('base64')}${frame('second').toString('base64')}`;
    const out: Buffer[] = [];
    for (let i = 0; i < text.length; i += 3)
      out.push(s.requestBody(Buffer.from(text.slice(i, i + 3))) as Buffer);
    assert.ok(s.requestEnd());
    assert.deepEqual(
      frames(Buffer.concat(out)).map((f) => f.payload.toString()),
      ['one', 'second'],
    );
    const t = grpcWebStream(request('application/grpc-web-text'), sink, () => null);
    assert.ok(t);
    assert.equal(t.requestBody(Buffer.from('AAAAAAJoaQ'))?.length, 6);
    assert.equal(t.requestEnd(), false, 'two characters short of a group');
    assert.equal(
      grpcWebStream(request('application/grpc-web-text'), sink, () => null)?.requestBody(Buffer.from('ab=c')),
      null,
    );
  });

  it('passes a binary body through, and takes no other content type', () => {
    const s = grpcWebStream(request('application/grpc-web'), sink, () => null);
    const body = frame('x');
    assert.equal(s?.requestBody(body), body);
    assert.equal(
      grpcWebStream(request('application/grpc'), sink, () => null),
      null,
    );
    assert.equal(
      grpcWebStream(request('application/grpc-web+json'), sink, () => null),
      null,
    );
  });

  it('turns the trailers into one frame after the data, and keeps a partial text frame until it is whole', () => {
    const written: Buffer[] = [];
    let head: IncomingHttpHeaders | null = null;
    const recording: ResponseSink = {
      headersSent: false,
      writeHead(_status, headers, contentLength) {
        head = {
          'content-type': headers[headers.indexOf('content-type') + 1],
          length: String(contentLength),
        };
      },
      writeData: (c) => written.push(c) > 0,
      end() {},
      reset() {},
    };
    const req = request('application/grpc-web');
    req.headers.push('accept', 'application/grpc-web-text');
    const s = grpcWebStream(req, recording, () => null);
    assert.ok(s);
    s.sink.writeHead(200, ['content-type', 'application/grpc'], 10, false);
    assert.deepEqual(head, { 'content-type': 'application/grpc-web-text+proto', length: '-1' });
    const reply = frame('hello');
    s.sink.writeData(reply.subarray(0, 4));
    assert.equal(written.length, 0);
    s.sink.writeData(reply.subarray(4));
    s.trailers(['grpc-status', '0', 'grpc-message', 'OK']);
    assert.deepEqual(
      written.map((w) => w.toString('latin1')),
      [
        reply.toString('base64'),
        frame(Buffer.from('grpc-status:0\r\ngrpc-message:OK\r\n'), 0x80).toString('base64'),
      ],
    );
  });
});

describe('grpc_web before grpc_http1_bridge in one chain', () => {
  it('the bridge takes the request grpc_web made gRPC; the client gets the status in the head and the trailers frame', () => {
    const out: { status: number; headers: string[]; length: number; data: Buffer[]; ended: boolean } = {
      status: 0,
      headers: [],
      length: 0,
      data: [],
      ended: false,
    };
    const sink: ResponseSink = {
      headersSent: false,
      writeHead(status, headers, contentLength) {
        Object.assign(out, { status, headers, length: contentLength });
      },
      writeData: (c) => out.data.push(c) > 0,
      end() {
        out.ended = true;
      },
      reset() {},
    };
    const req: HttpRequest = {
      method: 'POST',
      path: '/a.B/C',
      authority: 'x',
      scheme: 'http',
      headers: ['content-type', 'application/grpc-web'],
      protocol: 'HTTP/1.1',
      remoteIp: '127.0.0.1',
      contentLength: -1,
      hasBody: true,
    };
    const start = grpcStreamStarter(['grpc_web', 'grpc_http1_bridge']);
    const s = start?.(req, sink, () => null, {
      bufferLimit: 1 << 20,
      encodeTooLarge: () => assert.fail('held too much'),
    });
    assert.ok(s);
    s.sink.writeHead(200, ['content-type', 'application/grpc'], -1, false);
    s.sink.writeData(frame('part'));
    assert.equal(out.status, 0, 'the bridge holds the head until the trailers');
    s.trailers(['grpc-status', '3', 'grpc-message', 'bad']);
    s.sink.end();
    assert.equal(out.status, 503);
    assert.equal(out.headers[out.headers.indexOf('grpc-status') + 1], '3');
    assert.equal(out.headers[out.headers.indexOf('content-type') + 1], 'application/grpc-web+proto');
    const body = frames(Buffer.concat(out.data));
    assert.deepEqual(
      body.map((f) => [f.flag, f.payload.toString()]),
      [
        [0, 'part'],
        [0x80, 'grpc-status:3\r\ngrpc-message:bad\r\n'],
      ],
    );
    assert.ok(out.ended);
  });
});
