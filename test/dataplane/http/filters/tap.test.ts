/**
 * The tap filter as a chain filter (src/dataplane/http/filters/tap.ts): it records at its place
 * in `http_filters`, so listed before grpc_web it records a gRPC-Web text body as the client
 * sent it, and after it as the upstream gets it; it sits out every request while no `/tap`
 * session is attached, and its connection manager's config id is known to `/tap` until it
 * closes. The admin side over real sockets: test/admin/tap.test.ts.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { JsonObject } from '../../../../events/index.js';
import type { HttpRequest } from '../../../../src/dataplane/codec/request.js';
import type { FilterContext, StreamFilter } from '../../../../src/dataplane/http/filters/api.js';
import { GrpcWebFilter } from '../../../../src/dataplane/http/filters/grpc/web.js';
import { tapFactory } from '../../../../src/dataplane/http/filters/tap.js';
import { TapRecorder } from '../../../../src/dataplane/http/tap.js';
import { TapRegistry, type TapSession } from '../../../../src/dataplane/http/tap-registry.js';
import { chainOf } from '../../../helpers/filter-chain.js';

const EMPTY = Buffer.alloc(0);

function session(traces: JsonObject[]): TapSession {
  return {
    match: () => true,
    maxRxBytes: 1024,
    maxTxBytes: 1024,
    bodyAsString: true,
    emit: (t) => traces.push(t),
  };
}

const request = (): HttpRequest => ({
  method: 'POST',
  path: '/a.B/C',
  authority: 'x',
  scheme: 'http',
  headers: ['content-type', 'application/grpc-web-text'],
  protocol: 'HTTP/1.1',
  remoteIp: '127.0.0.1',
  contentLength: -1,
  hasBody: true,
});

/** The request body the trace of one request through `filters` shows. */
function recordedBody(filters: (tap: StreamFilter) => StreamFilter[]): unknown {
  const traces: JsonObject[] = [];
  const { runner } = chainOf(filters(new TapRecorder(session(traces))), request());
  runner.decodeHeaders();
  runner.decodeData(Buffer.from(Buffer.from('hello').toString('base64')), false);
  runner.decodeData(EMPTY, true);
  runner.destroy();
  assert.equal(traces.length, 1);
  const trace = traces[0]?.http_buffered_trace as { request: { body: { as_string: string } } };
  return trace.request.body.as_string;
}

describe('tap at its place in the chain', () => {
  it('before grpc_web records the body as sent, after it as the upstream gets it', () => {
    assert.equal(
      recordedBody((tap) => [tap, new GrpcWebFilter(() => null)]),
      Buffer.from('hello').toString('base64'),
    );
    assert.equal(
      recordedBody((tap) => [new GrpcWebFilter(() => null), tap]),
      'hello',
    );
  });

  it('sits a request out while no session is attached; registers its config id until its manager closes', () => {
    const taps = new TapRegistry();
    const closing: Array<() => void> = [];
    const ctx: Pick<FilterContext, 'taps' | 'onClose'> = {
      taps,
      onClose: (release) => void closing.push(release),
    };
    const make = tapFactory.start?.('id1', ctx as FilterContext);
    assert.ok(make);
    assert.ok(taps.hasFilter('id1'));
    assert.equal(make(), null);
    taps.sessions.set('id1', session([]));
    assert.ok(make() instanceof TapRecorder);
    for (const release of closing) release();
    assert.equal(taps.hasFilter('id1'), false);
  });
});
