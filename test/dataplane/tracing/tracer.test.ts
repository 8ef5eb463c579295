/**
 * Zipkin tracing end to end: spans at a real collector, context at a real upstream
 * (test/helpers/zipkin.ts); the sampling, bootstrap-tracer and worker cases are in
 * tracer-serve.test.ts.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { ZipkinSpanJson, ZipkinSpanJsonV1 } from '../../../src/dataplane/tracing/span.js';
import { until } from '../../helpers/dataplane.js';
import {
  tracedGet as get,
  spanFor,
  spansV1,
  startRecorders,
  stopRecorders,
  tracedBootstrap,
  withProxy,
} from '../../helpers/zipkin.js';

before(startRecorders);
after(stopRecorders);

describe('zipkin tracing', () => {
  it('reports in Zipkin JSON v1 without collector_endpoint_version (the v2 default, HTTP_JSON_V1)', async () => {
    const bootstrap = tracedBootstrap(
      {},
      { collector_endpoint: '/api/v1/spans', collector_endpoint_version: null },
    );
    await withProxy(bootstrap, [], async (_proxy, port) => {
      const seen = await get(port);
      const traceId = seen['x-b3-traceid'] as string;
      await until(() => spansV1.some((s) => s.traceId === traceId), 5000, 'the v1 span at the collector');
      const span = spansV1.find((s) => s.traceId === traceId) as ZipkinSpanJsonV1;
      assert.equal(span.id, traceId);
      assert.equal(span.name, 'checkAvailability');
      assert.deepEqual(
        span.annotations.map((a) => a.value),
        ['sr', 'ss'],
        'a server span: server receive and server send',
      );
      assert.equal(span.annotations[1]!.timestamp - span.annotations[0]!.timestamp, span.duration);
      assert.ok(span.annotations.every((a) => a.endpoint.serviceName !== undefined && a.endpoint.port >= 0));
      const tags = new Map(span.binaryAnnotations.map((b) => [b.key, b.value]));
      assert.equal(tags.get('http.status_code'), '200');
      assert.equal(tags.get('http.method'), 'GET');
      assert.equal((span as unknown as { kind?: string }).kind, undefined, 'no v2 fields');
    });
  });

  it('starts a trace, hands its context upstream and reports the span with the reference tags', async () => {
    await withProxy(tracedBootstrap({}), [], async (proxy, port) => {
      const seen = await get(port, { 'x-request-id': '12345678-1234-4234-8234-123456789abc' });
      const traceId = seen['x-b3-traceid'] as string;
      assert.match(traceId, /^[0-9a-f]{16}$/);
      assert.equal(seen['x-b3-spanid'], traceId, 'a root span: trace id = span id');
      assert.equal(seen['x-b3-parentspanid'], undefined);
      assert.equal(seen['x-b3-sampled'], '1');
      // Sampled: the UUID's version digit says so (b), for every later hop.
      assert.equal(seen['x-request-id'], '12345678-1234-b234-8234-123456789abc');
      await until(() => spanFor(traceId).length === 1, 5000, 'the span at the collector');
      const span = spanFor(traceId)[0] as ZipkinSpanJson;
      assert.equal(span.id, traceId);
      assert.equal(span.parentId, undefined);
      assert.equal(span.name, 'checkAvailability');
      assert.equal(span.kind, 'SERVER');
      assert.equal(span.shared, true);
      assert.ok(span.duration > 0 && span.timestamp > 1e15);
      assert.equal(span.tags.component, 'proxy');
      assert.equal(span.tags['guid:x-request-id'], '12345678-1234-b234-8234-123456789abc');
      assert.equal(span.tags['http.url'], `http://127.0.0.1:${port}/trace/1?x=y`);
      assert.equal(span.tags['http.method'], 'GET');
      assert.equal(span.tags['http.protocol'], 'HTTP/1.1');
      assert.equal(span.tags['http.status_code'], '200');
      assert.equal(span.tags.response_size, '2');
      assert.equal(span.tags.upstream_cluster, 'backend');
      assert.equal(span.tags.error, undefined);
      const stats = (await proxy.get('/stats')).body;
      assert.match(stats, /^http\.ingress_http\.tracing\.random_sampling: 1$/m);
      assert.match(stats, /^tracing\.zipkin\.spans_sent: 1$/m);
    });
  });

  it('continues an incoming B3 context: shared span on ingress, a child without shared context', async () => {
    const caller = { 'x-b3-traceid': '463ac35c9f6413ad48485a3953bb6124', 'x-b3-spanid': 'a2fb4a1d1a96d312' };
    await withProxy(tracedBootstrap({}), [], async (_proxy, port) => {
      const seen = await get(port, {
        ...caller,
        'x-b3-parentspanid': '0020000000000001',
        'x-b3-sampled': '1',
      });
      assert.equal(seen['x-b3-traceid'], caller['x-b3-traceid']);
      assert.equal(seen['x-b3-spanid'], caller['x-b3-spanid']);
      assert.equal(seen['x-b3-parentspanid'], '0020000000000001');
      await until(() => spanFor(caller['x-b3-traceid']).length === 1, 5000, 'the shared span');
      const span = spanFor(caller['x-b3-traceid'])[0] as ZipkinSpanJson;
      assert.equal(span.id, caller['x-b3-spanid']);
      assert.equal(span.parentId, '0020000000000001');
    });
    const single = 'b7ad6b7169203331b7ad6b7169203331-0b7ad6b716920333-1';
    await withProxy(tracedBootstrap({}, { shared_span_context: false }), [], async (_proxy, port) => {
      const seen = await get(port, { b3: single });
      assert.equal(seen['x-b3-traceid'], 'b7ad6b7169203331b7ad6b7169203331');
      assert.equal(seen['x-b3-parentspanid'], '0b7ad6b716920333');
      const child = seen['x-b3-spanid'] as string;
      assert.notEqual(child, '0b7ad6b716920333');
      await until(() => spanFor('b7ad6b7169203331b7ad6b7169203331').length === 1, 5000, 'the child span');
      const span = spanFor('b7ad6b7169203331b7ad6b7169203331')[0] as ZipkinSpanJson;
      assert.equal(span.id, child);
      assert.equal(span.parentId, '0b7ad6b716920333');
      assert.equal(span.kind, 'CLIENT');
      assert.equal(span.shared, undefined);
    });
  });
});
