/**
 * Zipkin tracing end to end: a real proxy process, a real upstream that records the headers
 * it gets, and a real collector that records the span lists POSTed to it.
 */
import assert from 'node:assert/strict';
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import type { JsonObject } from '../../../events/index.js';
import type { ZipkinSpanJson } from '../../../src/dataplane/tracing/span.js';
import { httpBootstrap } from '../../helpers/bootstraps.js';
import { cluster, until } from '../../helpers/dataplane.js';
import { type ProxyProcess, startProxyProcess } from '../../helpers/proxy-process.js';

interface Recorder {
  server: http.Server;
  port: number;
}

async function listen(handler: http.RequestListener): Promise<Recorder> {
  const server = http.createServer(handler);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, port: (server.address() as AddressInfo).port };
}

const spans: ZipkinSpanJson[] = [];
const upstreamHeaders: http.IncomingHttpHeaders[] = [];
let collector: Recorder;
let upstream: Recorder;

before(async () => {
  collector = await listen((req, res) => {
    let body = '';
    req.on('data', (d) => {
      body += d;
    });
    req.on('end', () => {
      assert.equal(req.url, '/api/v2/spans');
      assert.equal(req.headers['content-type'], 'application/json');
      spans.push(...(JSON.parse(body) as ZipkinSpanJson[]));
      res.writeHead(202).end();
    });
  });
  upstream = await listen((req, res) => {
    upstreamHeaders.push(req.headers);
    res.writeHead(200, { 'content-type': 'text/plain' }).end('ok');
  });
});

after(() => {
  collector.server.close();
  upstream.server.close();
});

/** A bootstrap whose one HCM traces with `tracing`, spans flushed one by one. */
function tracedBootstrap(tracing: JsonObject, zipkin: JsonObject = {}): JsonObject {
  const hcm = {
    stat_prefix: 'ingress_http',
    tracing: {
      ...tracing,
      provider: {
        name: 'envoy.tracers.zipkin',
        typed_config: {
          '@type': 'type.googleapis.com/envoy.config.trace.v2.ZipkinConfig',
          collector_cluster: 'zipkin',
          collector_endpoint: '/api/v2/spans',
          collector_endpoint_version: 'HTTP_JSON',
          ...zipkin,
        },
      },
    },
    route_config: {
      virtual_hosts: [
        {
          name: 'all',
          domains: ['*'],
          routes: [
            {
              match: { prefix: '/' },
              route: { cluster: 'backend' },
              decorator: { operation: 'checkAvailability' },
            },
          ],
        },
      ],
    },
    http_filters: [{ name: 'envoy.router' }],
  };
  return {
    ...httpBootstrap([cluster('backend', [upstream.port]), cluster('zipkin', [collector.port])], hcm),
    layered_runtime: { layers: [{ name: 'static', static_layer: { 'tracing.zipkin.min_flush_spans': 1 } }] },
  };
}

async function get(port: number, headers: Record<string, string> = {}): Promise<http.IncomingHttpHeaders> {
  const before = upstreamHeaders.length;
  const res = await fetch(`http://127.0.0.1:${port}/trace/1?x=y`, {
    headers,
    signal: AbortSignal.timeout(5000),
  });
  assert.equal(res.status, 200);
  await res.text();
  assert.equal(upstreamHeaders.length, before + 1);
  return upstreamHeaders[before] as http.IncomingHttpHeaders;
}

async function withProxy(
  bootstrap: JsonObject,
  args: string[],
  body: (p: ProxyProcess, port: number) => Promise<void>,
) {
  const proxy = await startProxyProcess(bootstrap, args);
  try {
    await body(proxy, await proxy.listenerPort('http'));
  } finally {
    await proxy.stop();
  }
}

const spanFor = (traceId: string) => spans.filter((s) => s.traceId === traceId);

describe('zipkin tracing', () => {
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

  it('with --concurrency 2 every worker reports its own spans', async () => {
    const ids: string[] = [];
    await withProxy(tracedBootstrap({}), ['--concurrency', '2'], async (proxy, port) => {
      for (let i = 0; i < 8; i++) ids.push((await get(port))['x-b3-traceid'] as string);
      await until(() => ids.every((id) => spanFor(id).length === 1), 8000, 'every span at the collector');
      const stats = (await proxy.get('/stats')).body;
      assert.match(stats, /^tracing\.zipkin\.spans_sent: 8$/m);
      assert.match(stats, /^tracing\.zipkin\.reports_sent: 8$/m);
    });
  });
});
