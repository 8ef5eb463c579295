/**
 * The grpc_http1_bridge filter (src/dataplane/http/filters/grpc/bridge.ts) run by the real chain
 * runner, without sockets: over HTTP/1.1 it holds the response until its trailers or its end
 * and sends it with its length; its hold has the buffer limit of any filter's, as the
 * reference's (a response past it is answered 500); over HTTP/2 it holds nothing. Over
 * sockets with real gRPC peers: test/dataplane/http/grpc-bridge.test.ts.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { HttpRequest } from '../../../../../src/dataplane/codec/request.js';
import { GrpcBridgeFilter } from '../../../../../src/dataplane/http/filters/grpc/bridge.js';
import { chainOf } from '../../../../helpers/filter-chain.js';
import { frame } from '../../../../helpers/grpc-upstream.js';

const EMPTY = Buffer.alloc(0);
const request = (protocol: HttpRequest['protocol']): HttpRequest => ({
  method: 'POST',
  path: '/a.B/C',
  authority: 'x',
  scheme: 'http',
  headers: ['content-type', 'application/grpc'],
  protocol,
  remoteIp: '127.0.0.1',
  contentLength: -1,
  hasBody: true,
});

describe('grpc_http1_bridge', () => {
  it('over HTTP/1.1, holds a response that ends without trailers and sends it with its length', () => {
    const { runner, out } = chainOf([new GrpcBridgeFilter(() => null)], request('HTTP/1.1'));
    runner.decodeHeaders();
    runner.encodeHeaders(200, ['content-type', 'application/grpc']);
    runner.encodeData(frame('a'), false);
    runner.encodeData(frame('bc'), false);
    assert.equal(out.head, null);
    runner.encodeData(EMPTY, true);
    assert.deepEqual(out.head, { status: 200, headers: ['content-type', 'application/grpc'], length: 13 });
    assert.deepEqual(Buffer.concat(out.downstream), Buffer.concat([frame('a'), frame('bc')]));
    assert.ok(out.ended);
  });

  it("over HTTP/1.1, an OK status keeps the upstream's 200 and goes in the head", () => {
    const { runner, out } = chainOf([new GrpcBridgeFilter(() => null)], request('HTTP/1.1'));
    runner.decodeHeaders();
    runner.encodeHeaders(200, ['content-type', 'application/grpc']);
    runner.encodeData(frame('ok'), false);
    runner.encodeTrailers(['grpc-status', '0']);
    assert.deepEqual(out.head, {
      status: 200,
      headers: ['content-type', 'application/grpc', 'grpc-status', '0'],
      length: 7,
    });
  });

  it('over HTTP/1.1, a trailers-only head (it ends the response) with a non-zero grpc-status is a 503 at once; with 0, a 200', () => {
    for (const [grpcStatus, want] of [
      ['5', 503],
      ['x', 503],
      ['0', 200],
    ] as const) {
      const { runner, out, ends } = chainOf([new GrpcBridgeFilter(() => null)], request('HTTP/1.1'));
      runner.decodeHeaders();
      ends.responseLength = 0;
      runner.encodeHeaders(200, ['content-type', 'application/grpc', 'grpc-status', grpcStatus]);
      assert.deepEqual(out.head, {
        status: want,
        headers: ['content-type', 'application/grpc', 'grpc-status', grpcStatus],
        length: 0,
      });
    }
  });

  it('over HTTP/1.1, an empty head without grpc-status is held for trailers that may follow', () => {
    const { runner, out, ends } = chainOf([new GrpcBridgeFilter(() => null)], request('HTTP/1.1'));
    runner.decodeHeaders();
    ends.responseLength = 0;
    runner.encodeHeaders(200, ['content-type', 'application/grpc']);
    assert.ok(out.head === null, 'held');
    runner.encodeTrailers(['grpc-status', '13']);
    assert.equal((out.head as { status: number } | null)?.status, 503);
  });

  it('answers 500 for a response past the buffer limit, as the reference (it holds it whole)', () => {
    const { runner, out } = chainOf([new GrpcBridgeFilter(() => null)], request('HTTP/1.1'), 16);
    runner.decodeHeaders();
    runner.encodeHeaders(200, ['content-type', 'application/grpc']);
    runner.encodeData(frame('0123456789'), false);
    runner.encodeData(frame('0123456789'), false);
    assert.deepEqual(out.reply, { status: 500, body: 'Internal Server Error' });
  });

  it('over HTTP/2, holds nothing: the client reads the trailers', () => {
    const { runner, out } = chainOf([new GrpcBridgeFilter(() => null)], request('HTTP/2'));
    runner.decodeHeaders();
    runner.encodeHeaders(200, ['content-type', 'application/grpc']);
    assert.equal(out.head?.status, 200);
    runner.encodeTrailers(['grpc-status', '2']);
    assert.deepEqual(out.trailers, ['grpc-status', '2']);
    assert.equal(out.head?.status, 200);
  });
});
