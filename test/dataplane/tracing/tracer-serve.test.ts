/**
 * Zipkin tracing end to end: spans at a real collector, context at a real upstream
 * (test/helpers/zipkin.ts): sampling off, the bootstrap's tracer, and workers.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { ZipkinSpanJson } from '../../../src/dataplane/tracing/span.js';
import type { Dump } from '../../helpers/bootstrap.js';
import { SETTLE_MS, settleMatch, until } from '../../helpers/dataplane.js';
import {
  tracedGet as get,
  spanFor,
  spans,
  startRecorders,
  stopRecorders,
  tracedBootstrap,
  withProxy,
} from '../../helpers/zipkin.js';

before(startRecorders);
after(stopRecorders);

describe('zipkin tracing, served', () => {
  it('with sampling off reports nothing but still propagates the context, marked not sampled', async () => {
    const before = spans.length;
    await withProxy(tracedBootstrap({ random_sampling: { value: 0 } }), [], async (proxy, port) => {
      const seen = await get(port);
      assert.match(seen['x-b3-traceid'] as string, /^[0-9a-f]{16}$/);
      assert.equal(seen['x-b3-sampled'], '0');
      assert.equal((seen['x-request-id'] as string)[14], '4');
      const stats = (await proxy.get('/stats')).body;
      assert.match(stats, /^http\.ingress_http\.tracing\.not_traceable: 1$/m);
    });
    // The proxy has stopped: its last flush has been sent, and held nothing.
    assert.equal(spans.length, before);
  });

  it("an HCM tracing without provider uses the bootstrap's tracing.http; a local 404 is traced too", async () => {
    const b = tracedBootstrap({ operation_name: 'EGRESS' }) as Dump;
    const hcm = b.static_resources.listeners[0].filter_chains[0].filters[0].typed_config;
    b.tracing = { http: hcm.tracing.provider };
    delete hcm.tracing.provider;
    hcm.route_config = { virtual_hosts: [{ name: 'v', domains: ['known'], routes: [] }] };
    await withProxy(b, [], async (_proxy, port) => {
      const res = await fetch(`http://127.0.0.1:${port}/nowhere`, {
        headers: { 'x-request-id': 'fedcba98-1234-4234-8234-123456789abc', 'x-b3-sampled': '1' },
        signal: AbortSignal.timeout(5000),
      });
      assert.equal(res.status, 404);
      await until(
        () => spans.some((s) => s.tags['guid:x-request-id']?.startsWith('fedcba98')),
        5000,
        'the 404 span',
      );
      const span = spans.find((s) => s.tags['guid:x-request-id']?.startsWith('fedcba98')) as ZipkinSpanJson;
      assert.equal(span.kind, 'CLIENT', 'egress');
      assert.equal(span.name, `127.0.0.1:${port}`, 'no decorator: the host');
      assert.equal(span.tags['http.status_code'], '404');
      assert.equal(span.tags.response_flags, 'NR');
      assert.equal(span.tags.upstream_cluster, undefined);
    });
  });

  it('with --concurrency 2 every worker reports its own spans', async () => {
    const ids: string[] = [];
    await withProxy(tracedBootstrap({}), ['--concurrency', '2'], async (proxy, port) => {
      for (let i = 0; i < 8; i++) ids.push((await get(port))['x-b3-traceid'] as string);
      await until(
        () => ids.every((id) => spanFor(id).length === 1),
        SETTLE_MS,
        'every span at the collector',
      );
      // Both workers' counts, summed: a worker late for the admin's deadline is counted later.
      const sent = /(?=[\s\S]*^tracing\.zipkin\.spans_sent: 8$)(?=[\s\S]*^tracing\.zipkin\.reports_sent: 8$)/m;
      const stats = await settleMatch(async () => (await proxy.get('/stats')).body, sent, SETTLE_MS);
      assert.match(stats, /^tracing\.zipkin\.spans_sent: 8$/m);
      assert.match(stats, /^tracing\.zipkin\.reports_sent: 8$/m);
    });
  });
});
