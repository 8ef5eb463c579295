import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import * as http from 'node:http';
import * as http2 from 'node:http2';
import * as https from 'node:https';
import type { AddressInfo } from 'node:net';
import * as net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import protobuf from 'protobufjs';
import type { JsonObject } from '../../../events/index.js';
import { healthFlags, hostHealth } from '../../../reducers/settings/health.js';
import type { HostState } from '../../../reducers/state.js';
import { cleanupsAfterAll } from '../../helpers/cleanups.js';
import { makePki } from '../../tls/certs.js';
import { checkedCluster, fastCheck, startHarness, waitFor } from './helpers.js';

const cleanups = cleanupsAfterAll();

async function listen(server: net.Server | http.Server | http2.Http2Server): Promise<number> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  cleanups.push(() => new Promise<void>((resolve) => server.close(() => resolve())));
  return (server.address() as AddressInfo).port;
}

test('HTTP check: host header defaults to the cluster name, a 503 takes the host out at once, healthy_threshold brings it back', async () => {
  let status = 200;
  const seen: http.IncomingHttpHeaders[] = [];
  const server = http.createServer((req, res) => {
    seen.push(req.headers);
    res.writeHead(req.url === '/healthz' ? status : 404).end();
  });
  const port = await listen(server);
  const h = startHarness([
    checkedCluster('svc', [port], {
      health_checks: [
        // A timeout far above a loaded machine's answer time: the test asserts no network failure.
        fastCheck(
          {
            http_health_check: {
              path: '/healthz',
              request_headers_to_add: [{ header: { key: 'x-check', value: 'yes' } }],
            },
          },
          { timeout: '5s' },
        ),
      ],
    }),
  ]);
  cleanups.push(() => h.close());
  // As in the reference, a checked member starts failing until its first check passes.
  assert.equal(h.host('svc', port)?.failedActiveHc, true);
  await h.edges.firstRound;
  await waitFor('first check passes', () => h.host('svc', port)?.failedActiveHc === false);
  assert.equal(seen[0]?.host, 'svc');
  assert.equal(seen[0]?.['x-check'], 'yes');
  assert.equal(seen[0]?.['user-agent'], 'proxy/HC');
  status = 503;
  await waitFor('503 takes it out', () => h.host('svc', port)?.failedActiveHc === true, 5000);
  assert.equal(h.stats.gauges.get('cluster.svc.health_check.healthy')?.value, 0);
  status = 200;
  const before = h.counter('cluster.svc.health_check.success');
  await waitFor('two passes bring it back', () => h.host('svc', port)?.failedActiveHc === false, 5000);
  assert.ok(
    h.counter('cluster.svc.health_check.success') - before >= 2,
    'healthy_threshold 2 needs two passes',
  );
  assert.ok(h.counter('cluster.svc.health_check.attempt') >= 4);
  assert.ok(h.counter('cluster.svc.health_check.failure') >= 1);
  assert.equal(h.counter('cluster.svc.health_check.network_failure'), 0);
  assert.equal(h.stats.gauges.get('cluster.svc.health_check.healthy')?.value, 1);
});

test('HTTP check: expected_statuses and service_name (verify_cluster) decide; a refused connection needs unhealthy_threshold failures', async () => {
  let identity = 'backend-a';
  const server = http.createServer((_req, res) => {
    res.writeHead(204, { 'x-proxy-upstream-healthchecked-cluster': identity }).end();
  });
  const port = await listen(server);
  const h = startHarness([
    checkedCluster('svc', [port], {
      health_checks: [
        fastCheck(
          {
            http_health_check: {
              path: '/',
              host: 'health.internal',
              service_name: 'backend',
              expected_statuses: [{ start: 200, end: 300 }],
            },
          },
          { unhealthy_threshold: 3 },
        ),
      ],
    }),
  ]);
  cleanups.push(() => h.close());
  await waitFor('204 with the right identity passes', () => h.host('svc', port)?.failedActiveHc === false);
  assert.ok(h.counter('cluster.svc.health_check.verify_cluster') >= 1);
  identity = 'other';
  await waitFor('a wrong identity fails', () => h.host('svc', port)?.failedActiveHc === true, 1000);
  identity = 'backend-a';
  await waitFor('back', () => h.host('svc', port)?.failedActiveHc === false, 1000);
  // Stop listening: connections are refused, network failures count toward the threshold.
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  const failuresBefore = h.counter('cluster.svc.health_check.network_failure');
  await waitFor('3 network failures take it out', () => h.host('svc', port)?.failedActiveHc === true, 2000);
  assert.ok(h.counter('cluster.svc.health_check.network_failure') - failuresBefore >= 3);
});

test('HTTP/2 check (use_http2) over h2c; a check slower than timeout is a network failure', async () => {
  let delayMs = 0;
  let streams = 0;
  const sessions = new Set<http2.ServerHttp2Session>();
  // Server push offered by the checker: it must be off, as for the pools (the codec sends ENABLE_PUSH 0).
  const enablePush: Array<boolean | undefined> = [];
  const server = http2.createServer();
  server.on('session', (s) => {
    sessions.add(s);
    // The checker resets a timed-out stream's connection; unheard, that reset is thrown here.
    s.on('error', () => {});
    s.on('remoteSettings', (settings) => enablePush.push(settings.enablePush));
  });
  server.on('stream', (stream, headers) => {
    streams++;
    assert.equal(headers[':authority'], 'svc');
    setTimeout(() => {
      if (!stream.destroyed) stream.respond({ ':status': 200 }, { endStream: true });
    }, delayMs);
  });
  const port = await listen(server);
  cleanups.push(() => {
    for (const s of sessions) s.destroy();
  });
  // A 1 s timeout, not fastCheck's 0.2 s: on a loaded machine (load 40 in CI) a 0.2 s check
  // timed out now and then, and the checker's new connection broke the one-session count.
  const h = startHarness([
    checkedCluster('svc', [port], {
      health_checks: [fastCheck({ http_health_check: { path: '/h', use_http2: true } }, { timeout: '1s' })],
    }),
  ]);
  cleanups.push(() => h.close());
  await waitFor('h2 check passes', () => h.host('svc', port)?.failedActiveHc === false);
  await waitFor('a few checks', () => streams >= 3);
  assert.equal(sessions.size, 1, 'reuse_connection keeps one session');
  assert.deepEqual(enablePush, [false]);
  delayMs = 3000;
  await waitFor('timeouts take it out', () => h.host('svc', port)?.failedActiveHc === true, 10_000);
  assert.ok(h.counter('cluster.svc.health_check.network_failure') >= 2);
  delayMs = 0;
  await waitFor('back', () => h.host('svc', port)?.failedActiveHc === false, 10_000);
});

test('HTTP checks apply request_headers_to_remove then _add as the router does, variables rendered, over HTTP/1 and HTTP/2', async () => {
  const mutation: JsonObject = {
    request_headers_to_add: [
      { header: { key: 'x-year', value: '%START_TIME(%Y)%' } },
      { header: { key: 'x-two', value: 'a' } },
      { header: { key: 'x-two', value: 'b' }, append: true },
      { header: { key: 'x-one', value: 'old' } },
      { header: { key: 'x-one', value: 'new' }, append: false },
    ],
    request_headers_to_remove: ['user-agent'],
  };
  const seen: http.IncomingHttpHeaders[] = [];
  const h1 = await listen(
    http.createServer((req, res) => {
      seen.push(req.headers);
      res.end();
    }),
  );
  const h2seen: http2.IncomingHttpHeaders[] = [];
  const h2server = http2.createServer();
  h2server.on('stream', (stream, headers) => {
    h2seen.push(headers);
    stream.respond({ ':status': 200 }, { endStream: true });
  });
  const h2 = await listen(h2server);
  const h = startHarness([
    checkedCluster('one', [h1], {
      health_checks: [fastCheck({ http_health_check: { path: '/', ...mutation } })],
    }),
    checkedCluster('two', [h2], {
      health_checks: [fastCheck({ http_health_check: { path: '/', use_http2: true, ...mutation } })],
    }),
  ]);
  cleanups.push(() => h.close());
  await waitFor('both checked', () => seen.length > 0 && h2seen.length > 0);
  const year = String(new Date().getUTCFullYear());
  for (const headers of [seen[0], h2seen[0]]) {
    assert.equal(headers?.['x-year'], year);
    assert.equal(headers?.['x-one'], 'new');
    assert.equal(headers?.['user-agent'], undefined);
  }
  assert.equal(seen[0]?.['x-two'], 'a, b');
  assert.deepEqual(h2seen[0]?.['x-two'], 'a, b');
});

test('TCP check: send and receive hex payloads, fuzzy in order; a wrong answer times out', async () => {
  let answer = 'xxPONGyyOK';
  const server = net.createServer((socket) => {
    socket.on('data', (d) => {
      if (d.toString() === 'PING') socket.write(answer);
    });
    socket.on('error', () => {});
  });
  const port = await listen(server);
  const hex = (s: string) => Buffer.from(s).toString('hex');
  const h = startHarness([
    checkedCluster('tcp', [port], {
      health_checks: [
        fastCheck({
          tcp_health_check: {
            send: { text: hex('PING') },
            receive: [{ text: hex('PONG') }, { text: hex('OK') }],
          },
        }),
      ],
    }),
  ]);
  cleanups.push(() => h.close());
  await waitFor('ping/pong passes', () => h.host('tcp', port)?.failedActiveHc === false);
  answer = 'OK PONG';
  await waitFor('out-of-order blocks fail', () => h.host('tcp', port)?.failedActiveHc === true, 2000);
  answer = 'PONG OK';
  await waitFor('back', () => h.host('tcp', port)?.failedActiveHc === false, 2000);
});

test('TCP connect-only check: a host that stops listening is taken out within unhealthy_threshold and comes back', async () => {
  const server = net.createServer((socket) => socket.on('error', () => {}));
  let port = await listen(server);
  const h = startHarness([
    checkedCluster('tcp', [port], { health_checks: [fastCheck({ tcp_health_check: {} })] }),
  ]);
  cleanups.push(() => h.close());
  await waitFor('connect passes', () => h.host('tcp', port)?.failedActiveHc === false);
  await new Promise<void>((resolve) => server.close(() => resolve()));
  const took = await waitFor('refused twice', () => h.host('tcp', port)?.failedActiveHc === true, 2000);
  assert.ok(took < 1000, `out in ${took} ms with a 50 ms interval and threshold 2`);
  const again = net.createServer((socket) => socket.on('error', () => {}));
  await new Promise<void>((resolve) => again.listen(port, '127.0.0.1', resolve));
  cleanups.push(() => new Promise<void>((resolve) => again.close(() => resolve())));
  port = (again.address() as AddressInfo).port;
  await waitFor('listening again', () => h.host('tcp', port)?.failedActiveHc === false, 2000);
});

const healthProto = protobuf.Root.fromJSON({
  nested: {
    HealthCheckRequest: { fields: { service: { type: 'string', id: 1 } } },
    HealthCheckResponse: { fields: { status: { type: 'int32', id: 1 } } },
  },
});
const Request = healthProto.lookupType('HealthCheckRequest');
const Response = healthProto.lookupType('HealthCheckResponse');

test('gRPC check: grpc.health.v1.Health/Check with service_name and authority; NOT_SERVING takes the host out', async () => {
  let serving = 1;
  const asked: Array<{ service: string; authority: string }> = [];
  const server = new grpc.Server();
  server.addService(
    {
      Check: {
        path: '/grpc.health.v1.Health/Check',
        requestStream: false,
        responseStream: false,
        requestSerialize: (v: object) => Buffer.from(Request.encode(v).finish()),
        requestDeserialize: (b: Buffer) => Request.toObject(Request.decode(b), { defaults: true }),
        responseSerialize: (v: object) => Buffer.from(Response.encode(v).finish()),
        responseDeserialize: (b: Buffer) => Response.toObject(Response.decode(b)),
      },
    },
    {
      Check: (
        call: grpc.ServerUnaryCall<{ service: string }, object>,
        callback: grpc.sendUnaryData<object>,
      ) => {
        asked.push({ service: call.request.service, authority: call.getHost() });
        callback(null, { status: serving });
      },
    },
  );
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (err, p) =>
      err ? reject(err) : resolve(p),
    ),
  );
  cleanups.push(() => new Promise<void>((resolve) => server.tryShutdown(() => resolve())));
  const h = startHarness([
    checkedCluster('grpc', [port], {
      health_checks: [
        fastCheck({ grpc_health_check: { service_name: 'pkg.Svc', authority: 'grpc.internal' } }),
      ],
    }),
  ]);
  cleanups.push(() => h.close());
  await waitFor('SERVING passes', () => h.host('grpc', port)?.failedActiveHc === false);
  assert.deepEqual(asked[0], { service: 'pkg.Svc', authority: 'grpc.internal' });
  serving = 2;
  await waitFor('NOT_SERVING fails at once', () => h.host('grpc', port)?.failedActiveHc === true, 1000);
  serving = 1;
  await waitFor('back', () => h.host('grpc', port)?.failedActiveHc === false, 1000);
});

test('HTTP check parses what upstreams send: chunked bodies with trailers on a kept connection, bodies that end at the close, 100 Continue first', async () => {
  let mode = 'chunked';
  let connections = 0;
  const server = net.createServer((socket) => {
    connections++;
    socket.on('error', () => {});
    socket.on('data', () => {
      if (mode === 'chunked')
        socket.write('HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n2\r\nok\r\n0\r\nx-t: 1\r\n\r\n');
      else if (mode === 'close') socket.end('HTTP/1.0 200 OK\r\n\r\nall of it');
      else if (mode === 'continue')
        socket.write('HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 503 Unavailable\r\ncontent-length: 2\r\n\r\nno');
      else socket.write('garbage\r\n\r\n');
    });
  });
  const port = await listen(server);
  const h = startHarness([
    checkedCluster('svc', [port], { health_checks: [fastCheck({ http_health_check: { path: '/' } })] }),
  ]);
  cleanups.push(() => h.close());
  await waitFor('chunked passes', () => h.host('svc', port)?.failedActiveHc === false);
  await waitFor('a few checks', () => h.counter('cluster.svc.health_check.success') >= 4);
  assert.equal(connections, 1, 'the chunked answers keep the connection');
  mode = 'continue';
  await waitFor('the 503 after 100 Continue fails', () => h.host('svc', port)?.failedActiveHc === true, 1000);
  mode = 'close';
  await waitFor(
    'a body ending at the close passes',
    () => h.host('svc', port)?.failedActiveHc === false,
    1000,
  );
  mode = 'garbage';
  const before = h.counter('cluster.svc.health_check.network_failure');
  await waitFor(
    'garbage is a network failure',
    () => h.counter('cluster.svc.health_check.network_failure') > before,
    1000,
  );
});

test('event_log_path: one HealthCheckEvent line per verdict change, and per failed check with always_log_health_check_failures', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'hc-log-'));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  const path = join(dir, 'hc.log');
  const server = net.createServer((socket) => socket.on('error', () => {}));
  const port = await listen(server);
  const h = startHarness([
    checkedCluster('tcp', [port], {
      health_checks: [
        fastCheck(
          { tcp_health_check: {} },
          { event_log_path: path, always_log_health_check_failures: true, unhealthy_threshold: 1 },
        ),
      ],
    }),
  ]);
  cleanups.push(() => h.close());
  await waitFor('healthy', () => h.host('tcp', port)?.failedActiveHc === false);
  await new Promise<void>((resolve) => server.close(() => resolve()));
  await waitFor('out', () => h.host('tcp', port)?.failedActiveHc === true, 2000);
  await waitFor('a second failure logged', () => h.counter('cluster.tcp.health_check.failure') >= 2, 2000);
  h.close();
  await new Promise((r) => setTimeout(r, 50));
  const lines = readFileSync(path, 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l));
  const about = {
    health_checker_type: 'TCP',
    host: { socket_address: { protocol: 'TCP', address: '127.0.0.1', port_value: port } },
    cluster_name: 'tcp',
  };
  const strip = ({ timestamp, ...rest }: { timestamp: string }) => {
    assert.ok(!Number.isNaN(Date.parse(timestamp)));
    return rest;
  };
  assert.deepEqual(strip(lines[0]), { ...about, add_healthy_event: { first_check: true } });
  assert.deepEqual(strip(lines[1]), { ...about, eject_unhealthy_event: { failure_type: 'NETWORK' } });
  assert.deepEqual(strip(lines[2]), {
    ...about,
    health_check_failure_event: { failure_type: 'NETWORK', first_check: false },
  });
});

test('checks of a TLS cluster speak TLS (verified against trusted_ca): HTTP/1, HTTP/2 and TCP', async () => {
  const pki = makePki();
  cleanups.push(() => pki.remove());
  const up = pki.leaf('upstream', ['DNS:upstream.test']);
  let status = 200;
  const h1 = https.createServer({ cert: up.certPem, key: up.keyPem }, (_req, res) =>
    res.writeHead(status).end(),
  );
  const h2 = http2.createSecureServer({ cert: up.certPem, key: up.keyPem }, (_req, res) =>
    res.writeHead(status).end(),
  );
  const [p1, p2] = [await listen(h1), await listen(h2)];
  const tls = {
    transport_socket: {
      name: 'proxy.transport_sockets.tls',
      typed_config: {
        '@type': 'type.googleapis.com/envoy.api.v2.auth.UpstreamTlsContext',
        sni: 'upstream.test',
        common_tls_context: { validation_context: { trusted_ca: { filename: pki.ca.cert } } },
      },
    },
  };
  const h = startHarness([
    checkedCluster('one', [p1], { ...tls, health_checks: [fastCheck({ http_health_check: { path: '/' } })] }),
    checkedCluster('two', [p2], {
      ...tls,
      health_checks: [fastCheck({ http_health_check: { path: '/', codec_client_type: 'HTTP2' } })],
    }),
    checkedCluster('tcp', [p1], { ...tls, health_checks: [fastCheck({ tcp_health_check: {} })] }),
  ]);
  cleanups.push(() => h.close());
  await waitFor('HTTP/1 over TLS passes', () => h.host('one', p1)?.failedActiveHc === false);
  await waitFor('HTTP/2 over TLS passes', () => h.host('two', p2)?.failedActiveHc === false);
  await waitFor('TLS connect passes', () => h.host('tcp', p1)?.failedActiveHc === false);
  assert.ok(h.counter('cluster.one.ssl.handshake') >= 1);
  status = 503;
  await waitFor('a 503 over TLS fails', () => h.host('one', p1)?.failedActiveHc === true, 1000);
  await waitFor('over HTTP/2 too', () => h.host('two', p2)?.failedActiveHc === true, 1000);
});

test('the runtime keys health_check.max_interval and min_interval clamp every wait', async () => {
  const counts = { fast: 0, slow: 0 };
  const serverFor = (name: keyof typeof counts) =>
    net.createServer((socket) => {
      counts[name]++;
      socket.on('error', () => {});
    });
  const [fast, slow] = [await listen(serverFor('fast')), await listen(serverFor('slow'))];
  const layer = (values: JsonObject) => ({
    layered_runtime: { layers: [{ name: 'static', static_layer: values }] },
  });
  const tcp = (port: number, interval: string) =>
    checkedCluster('tcp', [port], {
      health_checks: [fastCheck({ tcp_health_check: {} }, { interval, no_traffic_interval: interval })],
    });
  const clamped = startHarness([tcp(fast, '10s')], layer({ 'health_check.max_interval': 50 }));
  const floored = startHarness([tcp(slow, '0.02s')], layer({ 'health_check.min_interval': 250 }));
  cleanups.push(
    () => clamped.close(),
    () => floored.close(),
  );
  // Unclamped, the fast server would see one check in 10 s; clamped, six come within seconds
  // even on a loaded machine. The slow server's bound is taken over the time that really passed.
  const started = Date.now();
  await waitFor('six checks of the clamped cluster', () => counts.fast >= 6, 10_000);
  const elapsed = Date.now() - started;
  assert.ok(
    counts.slow <= Math.floor(elapsed / 250) + 2,
    `${counts.slow} checks in ${elapsed} ms: 20 ms raised to 250 ms`,
  );
});

test('a passing answer with x-proxy-degraded marks the host /degraded_active_hc (degraded for the balancers) until a plain pass', async () => {
  let degraded = false;
  const server = http.createServer((_req, res) =>
    res.writeHead(200, degraded ? { 'x-proxy-degraded': '1' } : {}).end(),
  );
  const port = await listen(server);
  const h = startHarness([
    checkedCluster('svc', [port], { health_checks: [fastCheck({ http_health_check: { path: '/' } })] }),
  ]);
  cleanups.push(() => h.close());
  await waitFor('healthy', () => h.host('svc', port)?.failedActiveHc === false);
  degraded = true;
  await waitFor('degraded', () => h.host('svc', port)?.degradedActiveHc === true, 1000);
  const host = h.host('svc', port) as HostState;
  assert.equal(healthFlags(host), '/degraded_active_hc');
  assert.equal(hostHealth(host), 'degraded');
  assert.equal(h.stats.gauges.get('cluster.svc.health_check.degraded')?.value, 1);
  assert.equal(h.stats.gauges.get('cluster.svc.health_check.healthy')?.value, 0);
  degraded = false;
  await waitFor('no longer degraded', () => h.host('svc', port)?.degradedActiveHc === undefined, 1000);
  assert.equal(hostHealth(h.host('svc', port) as HostState), 'healthy');
});

test("no_traffic_healthy_interval spaces a healthy host's checks while the cluster has no traffic; a failing one keeps no_traffic_interval", async () => {
  // Root cause: the v3 field was unknown, so the reference's locality-load-balancing sandbox was refused.
  const counts = { healthy: 0, failing: 0 };
  const ok = http.createServer((_req, res) => {
    counts.healthy++;
    res.end();
  });
  const failing = http.createServer((_req, res) => {
    counts.failing++;
    res.writeHead(503).end();
  });
  const [okPort, failingPort] = [await listen(ok), await listen(failing)];
  const check = fastCheck(
    { http_health_check: { path: '/' } },
    // A timeout far above a loaded machine's answer time: a timed-out check would fail the
    // healthy host and bring it back to the 50 ms interval.
    { healthy_threshold: 1, no_traffic_healthy_interval: '3600s', timeout: '5s' },
  );
  const h = startHarness([
    checkedCluster('up', [okPort], { health_checks: [check] }),
    checkedCluster('down', [failingPort], { health_checks: [check] }),
  ]);
  cleanups.push(() => h.close());
  await waitFor('healthy', () => h.host('up', okPort)?.failedActiveHc === false);
  // The failing host's checks at 50 ms are the clock: four of them, and the healthy host had
  // no check after the one that passed.
  await waitFor('four checks of the failing host at 50 ms', () => counts.failing >= 4, 10_000);
  assert.ok(
    counts.healthy <= 2,
    `${counts.healthy} checks of the healthy host: the next one is an hour away`,
  );
  ok.close();
  failing.close();
});

test('an upstream that floods a TCP or gRPC check fails it once 1 MiB came without the answer, and its connection closes', async () => {
  // Root cause: a TCP check joined every read into one buffer with no bound, copying the whole
  // of it at each read on the main thread (12 MB in 2.5 s cost 690 ms of CPU and 62 MB), and a
  // gRPC check held its whole body: an upstream sending without end held both until the
  // timeout. The reference holds a connection's per-connection buffer (1 MiB by default).
  const flood = { tcpBytes: 0, tcpClosed: 0, grpcBytes: 0, grpcClosed: 0 };
  const tcpServer = net.createServer((socket) => {
    socket.on('error', () => {});
    socket.on('close', () => flood.tcpClosed++);
    const chunk = Buffer.alloc(65536, 120);
    const pump = () => {
      while (!socket.destroyed && flood.tcpBytes < 64e6) {
        flood.tcpBytes += chunk.length;
        if (!socket.write(chunk)) return void socket.once('drain', pump);
      }
    };
    pump();
  });
  const grpcServer = http2.createServer();
  grpcServer.on('stream', (stream) => {
    stream.on('error', () => {});
    stream.on('close', () => flood.grpcClosed++);
    stream.respond({ ':status': 200, 'content-type': 'application/grpc' });
    const chunk = Buffer.alloc(65536, 120);
    const pump = () => {
      while (!stream.destroyed && flood.grpcBytes < 64e6) {
        flood.grpcBytes += chunk.length;
        if (!stream.write(chunk)) return void stream.once('drain', pump);
      }
    };
    pump();
  });
  const tcpPort = await listen(tcpServer);
  const grpcPort = await new Promise<number>((resolve) =>
    grpcServer.listen(0, '127.0.0.1', () => resolve((grpcServer.address() as AddressInfo).port)),
  );
  cleanups.push(
    () => new Promise<void>((resolve) => grpcServer.close(() => resolve())),
    () => new Promise<void>((resolve) => tcpServer.close(() => resolve())),
  );
  // A 30 s timeout: within the waits below, only the bound can fail a check.
  const slow = { timeout: '30s', interval: '0.1s', no_traffic_interval: '0.1s' };
  const h = startHarness([
    checkedCluster('tcp', [tcpPort], {
      health_checks: [fastCheck({ tcp_health_check: { receive: [{ text: '504f4e47' }] } }, slow)],
    }),
    checkedCluster('grpc', [grpcPort], { health_checks: [fastCheck({ grpc_health_check: {} }, slow)] }),
  ]);
  cleanups.push(() => h.close());
  // 20 s waits: at load 40 in CI the gRPC flood's bytes took more than 5 s to arrive.
  await waitFor('TCP checks fail', () => h.counter('cluster.tcp.health_check.failure') >= 2, 20_000);
  await waitFor('gRPC checks fail', () => h.counter('cluster.grpc.health_check.failure') >= 2, 20_000);
  await waitFor(
    'the connections and streams closed',
    () => flood.tcpClosed >= 2 && flood.grpcClosed >= 2,
    20_000,
  );
  assert.ok(flood.tcpBytes < 32e6, `the TCP upstream sent ${flood.tcpBytes} bytes`);
});
