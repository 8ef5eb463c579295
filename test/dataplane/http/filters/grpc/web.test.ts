/**
 * The grpc_web filter (src/dataplane/http/filters/grpc/web.ts) run by the real chain runner,
 * without sockets: the request rewritten, a text body decoded however it is split (and refused
 * when it is not base64), the response's content type, length, base64 frames and trailers frame,
 * and with grpc_http1_bridge after it in one chain. Over sockets: test/dataplane/http/grpc-web.test.ts.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import type { HttpRequest } from '../../../../../src/dataplane/codec/request.js';
import { GrpcBridgeFilter } from '../../../../../src/dataplane/http/filters/grpc/bridge.js';
import { BAD_GRPC_WEB_BODY, GrpcWebFilter } from '../../../../../src/dataplane/http/filters/grpc/web.js';
import { type ChainRecord, chainOf } from '../../../../helpers/filter-chain.js';
import { frame, frames } from '../../../../helpers/grpc-upstream.js';

const EMPTY = Buffer.alloc(0);
const noScope = () => null;
const FUZZ_RUNS = Number(process.env.FUZZ_RUNS ?? 200);

const request = (type: string, extra: string[] = []): HttpRequest => ({
  method: 'POST',
  path: '/a.B/C',
  authority: 'x',
  scheme: 'http',
  headers: ['content-type', type, 'content-length', '12', ...extra],
  protocol: 'HTTP/1.1',
  remoteIp: '127.0.0.1',
  contentLength: 12,
  hasBody: true,
});

/** A text request's body sent in `pieces`, then its end: what the upstream got, and any answer. */
function sendText(pieces: string[]) {
  const { runner, out } = chainOf([new GrpcWebFilter(noScope)], request('application/grpc-web-text'));
  runner.decodeHeaders();
  for (const p of pieces) runner.decodeData(Buffer.from(p, 'latin1'), false);
  runner.decodeData(EMPTY, true);
  return out;
}

describe('grpc_web text decoding', () => {
  it('rewrites the request as gRPC, without a length for a text body', () => {
    const req = request('application/grpc-web-text');
    chainOf([new GrpcWebFilter(noScope)], req).runner.decodeHeaders();
    assert.equal(req.contentLength, -1);
    assert.deepEqual(req.headers, [
      'content-type',
      'application/grpc',
      'te',
      'trailers',
      'grpc-accept-encoding',
      'identity,deflate,gzip',
    ]);
  });

  it('decodes base64 split anywhere, across padded segments, and refuses a short tail at the end', () => {
    const text = `${frame('one').toString('base64')}${frame('second').toString('base64')}`;
    const pieces: string[] = [];
    for (let i = 0; i < text.length; i += 3) pieces.push(text.slice(i, i + 3));
    const out = sendText(pieces);
    assert.equal(out.reply, null);
    assert.deepEqual(
      frames(Buffer.concat(out.upstream)).map((f) => f.payload.toString()),
      ['one', 'second'],
    );
    const short = sendText(['AAAAAAJoaQ']);
    assert.equal(Buffer.concat(short.upstream).length, 6);
    assert.deepEqual(
      short.reply,
      { status: 400, body: BAD_GRPC_WEB_BODY },
      'two characters short of a group',
    );
    assert.deepEqual(sendText(['ab=c']).reply, { status: 400, body: BAD_GRPC_WEB_BODY });
  });

  it('decodes any base64 body split at any points as the whole body decodes (property)', () => {
    fc.assert(
      fc.property(
        fc.uint8Array({ maxLength: 64 }),
        fc.array(fc.nat({ max: 100 }), { maxLength: 6 }),
        (bytes, cuts) => {
          const text = Buffer.from(bytes).toString('base64');
          const at = [...new Set(cuts.map((c) => c % (text.length + 1)))].sort((a, b) => a - b);
          const pieces = [0, ...at].map((from, i) => text.slice(from, at[i] ?? text.length));
          const out = sendText(pieces);
          assert.equal(out.reply, null);
          assert.deepEqual(Buffer.concat(out.upstream), Buffer.from(bytes));
        },
      ),
      { numRuns: FUZZ_RUNS },
    );
  });

  it('answers any body 400 or decodes it, never throwing; only whole groups pass (property)', () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 40 }), (text) => {
        const out = sendText([text]);
        if (out.reply !== null) assert.deepEqual(out.reply, { status: 400, body: BAD_GRPC_WEB_BODY });
        else assert.equal(text.length % 4, 0, text);
      }),
      { numRuns: FUZZ_RUNS },
    );
  });

  it('passes a binary body through, and takes no other content type', () => {
    const { runner, out } = chainOf([new GrpcWebFilter(noScope)], request('application/grpc-web'));
    runner.decodeHeaders();
    const body = frame('x');
    runner.decodeData(body, false);
    assert.equal(out.upstream[0], body);
    for (const type of ['application/grpc', 'application/grpc-web+json']) {
      const req = request(type);
      const other = chainOf([new GrpcWebFilter(noScope)], req);
      other.runner.decodeHeaders();
      other.runner.encodeHeaders(200, ['content-type', 'text/plain']);
      assert.deepEqual(req.headers, ['content-type', type, 'content-length', '12'], type);
      assert.deepEqual(other.out.head?.headers, ['content-type', 'text/plain'], type);
    }
  });

  it('turns the trailers into one frame after the data, and keeps a partial text frame until it is whole', () => {
    const { runner, out, ends } = chainOf(
      [new GrpcWebFilter(noScope)],
      request('application/grpc-web', ['accept', 'application/grpc-web-text']),
    );
    runner.decodeHeaders();
    ends.responseLength = 10;
    runner.encodeHeaders(200, ['content-type', 'application/grpc']);
    assert.deepEqual(out.head, {
      status: 200,
      headers: ['content-type', 'application/grpc-web-text+proto'],
      length: -1,
    });
    const reply = frame('hello');
    runner.encodeData(reply.subarray(0, 4), false);
    assert.equal(out.downstream.length, 0);
    runner.encodeData(reply.subarray(4), false);
    runner.encodeTrailers(['grpc-status', '0', 'grpc-message', 'OK']);
    assert.deepEqual(
      out.downstream.map((w) => w.toString('latin1')),
      [
        reply.toString('base64'),
        frame(Buffer.from('grpc-status:0\r\ngrpc-message:OK\r\n'), 0x80).toString('base64'),
      ],
    );
    assert.deepEqual(out.trailers, [], 'the trailers are in the body: none go on');
  });
});

describe('grpc_web before grpc_http1_bridge in one chain', () => {
  it('the bridge takes the request grpc_web made gRPC; the client gets the status in the head and the trailers frame', () => {
    const req = request('application/grpc-web');
    const { runner, out } = chainOf([new GrpcWebFilter(noScope), new GrpcBridgeFilter(noScope)], req);
    runner.decodeHeaders();
    runner.encodeHeaders(200, ['content-type', 'application/grpc']);
    runner.encodeData(frame('part'), false);
    assert.equal(out.head, null, 'the bridge holds the head until the trailers');
    runner.encodeTrailers(['grpc-status', '3', 'grpc-message', 'bad']);
    const head = out.head as ChainRecord['head'];
    assert.equal(head?.status, 503);
    const headers = head?.headers ?? [];
    assert.equal(headers[headers.indexOf('grpc-status') + 1], '3');
    assert.equal(headers[headers.indexOf('content-type') + 1], 'application/grpc-web+proto');
    assert.equal(head?.length, -1, 'grpc_web sends its body as it comes');
    assert.deepEqual(
      frames(Buffer.concat(out.downstream)).map((f) => [f.flag, f.payload.toString()]),
      [
        [0, 'part'],
        [0x80, 'grpc-status:3\r\ngrpc-message:bad\r\n'],
      ],
    );
    assert.ok(out.ended);
  });
});
