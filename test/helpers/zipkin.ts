/**
 * Zipkin tracing end to end (test/dataplane/tracing/): a real upstream that records the headers
 * it gets and a real collector that records the span lists POSTed to it, both on loopback, and
 * a proxy process whose one HCM traces to that collector. One world per test file (process).
 */
import assert from 'node:assert/strict';
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { JsonObject } from '../../events/index.js';
import type { ZipkinSpanJson, ZipkinSpanJsonV1 } from '../../src/dataplane/tracing/span.js';
import { httpBootstrap } from './bootstraps.js';
import { cluster } from './dataplane.js';
import { type ProxyProcess, startProxyProcess } from './proxy-process.js';

interface Recorder {
  server: http.Server;
  port: number;
}

async function listen(handler: http.RequestListener): Promise<Recorder> {
  const server = http.createServer(handler);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, port: (server.address() as AddressInfo).port };
}

export const spans: ZipkinSpanJson[] = [];
/** Spans POSTed to `/api/v1/spans` (Zipkin's JSON v1, `HTTP_JSON_V1`). */
export const spansV1: ZipkinSpanJsonV1[] = [];
export const upstreamHeaders: http.IncomingHttpHeaders[] = [];
let collector: Recorder;
let upstream: Recorder;

/** Starts the collector and the upstream (call in `before`). */
export async function startRecorders(): Promise<void> {
  collector = await listen((req, res) => {
    let body = '';
    req.on('data', (d) => {
      body += d;
    });
    req.on('end', () => {
      assert.equal(req.headers['content-type'], 'application/json');
      if (req.url === '/api/v1/spans') spansV1.push(...(JSON.parse(body) as ZipkinSpanJsonV1[]));
      else {
        assert.equal(req.url, '/api/v2/spans');
        spans.push(...(JSON.parse(body) as ZipkinSpanJson[]));
      }
      res.writeHead(202).end();
    });
  });
  upstream = await listen((req, res) => {
    upstreamHeaders.push(req.headers);
    res.writeHead(200, { 'content-type': 'text/plain' }).end('ok');
  });
}

/** Stops them (call in `after`). */
export function stopRecorders(): void {
  collector.server.close();
  upstream.server.close();
}

/** A bootstrap whose one HCM traces with `tracing`, spans flushed one by one (a null in `zipkin` leaves that field out). */
export function tracedBootstrap(tracing: JsonObject, zipkin: JsonObject = {}): JsonObject {
  const hcm = {
    stat_prefix: 'ingress_http',
    tracing: {
      ...tracing,
      provider: {
        name: 'envoy.tracers.zipkin',
        typed_config: Object.fromEntries(
          Object.entries({
            '@type': 'type.googleapis.com/envoy.config.trace.v2.ZipkinConfig',
            collector_cluster: 'zipkin',
            collector_endpoint: '/api/v2/spans',
            collector_endpoint_version: 'HTTP_JSON',
            ...zipkin,
          }).filter(([, v]) => v !== null),
        ),
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

export async function tracedGet(
  port: number,
  headers: Record<string, string> = {},
): Promise<http.IncomingHttpHeaders> {
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

export async function withProxy(
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

export const spanFor = (traceId: string) => spans.filter((s) => s.traceId === traceId);
