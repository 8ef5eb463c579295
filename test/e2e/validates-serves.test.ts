/**
 * What validates, serves: every bootstrap we ship or copied from the reference's own docs and
 * examples either fails `--mode validate` naming a field, or validates and then serves with
 * every configured listener bound on a real port.
 */
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import * as http from 'node:http';
import * as net from 'node:net';
import { basename, join } from 'node:path';
import { describe, it } from 'node:test';
import { socketHelper } from '../../src/dataplane/listeners/native.js';
import { scratchDir, writeFixture } from '../helpers/admin.js';
import { type Dump, fixture, load, read, root, runCli } from '../helpers/bootstrap.js';
import { runProxy } from '../helpers/cli.js';
import { LrsServer } from '../helpers/lrs-server.js';
import { startProxyProcess } from '../helpers/proxy-process.js';
import { assertRefusedNamingFields, assertServesEveryListener, onFreePorts } from '../helpers/serves.js';
import { until } from '../helpers/xds-fixtures.js';
import { makePki } from '../tls/certs.js';

const corpus = [
  ...readdirSync(join(root, 'fixtures/bootstrap')).map((f) => fixture(f)),
  ...readdirSync(join(root, 'fixtures/real-world'))
    .filter((f) => !f.endsWith('.md'))
    .map((f) => join(root, 'fixtures/real-world', f)),
];

/** Whether a bootstrap names a management server (dynamic_resources or an EDS cluster). */
function usesDiscovery(bootstrap: Dump): boolean {
  const clusters: Dump[] = bootstrap.static_resources?.clusters ?? [];
  return bootstrap.dynamic_resources !== undefined || clusters.some((c) => c.type === 'EDS');
}

/**
 * What fixtures/real-world/README.md says of each file: `serves` or `refused: ...`, so the
 * README changes with the build when a feature makes a refused example serve. A file that
 * serves through the native socket helper is refused (naming its fields) where the helper is
 * not built, as docs/data-plane.md says; one that writes its access log in a directory the
 * README names is refused where that directory does not exist.
 */
function readmeOutcomes(): Map<string, 'serves' | 'refused'> {
  const native = typeof socketHelper() !== 'string';
  const rows = readFileSync(join(root, 'fixtures/real-world/README.md'), 'utf8')
    .split('\n')
    .filter((line) => line.startsWith('| `'));
  return new Map(
    rows.map((line) => {
      const [file = '', , result = ''] = line
        .slice(1, -1)
        .split('|')
        .map((cell) => cell.trim());
      // `serves where `/dir` exists`: the file's access log directory must be there.
      const needs = /^serves where `([^`]+)` exists/.exec(result)?.[1];
      const serves =
        result.startsWith('serves') &&
        (native || !result.includes('native helper')) &&
        (!needs || existsSync(needs));
      return [file.replaceAll('`', ''), serves ? 'serves' : 'refused'];
    }),
  );
}

// Each case waits mostly on a child process starting; a few at once keep the walk short.
describe('every bootstrap in fixtures/ and fixtures/real-world/', { concurrency: 4 }, () => {
  const readme = readmeOutcomes();
  for (const path of corpus) {
    const name = path.slice(root.length);
    it(`${name}: refused naming a field, or validates and serves every listener`, async () => {
      // In-process, the function `--mode validate` runs; its errors are the lines it prints.
      const loaded = load({ configPath: path });
      if (path.includes('/real-world/')) {
        const said = readme.get(basename(path));
        assert.ok(said, `fixtures/real-world/README.md does not list ${basename(path)}`);
        const errors = loaded.ok ? '' : loaded.errors.join('\n');
        assert.equal(loaded.ok ? 'serves' : 'refused', said, `README is out of date:\n${errors}`);
      }
      if (!loaded.ok) return assertRefusedNamingFields(loaded.errors, name);
      // A bootstrap that discovers resources serves against a management server:
      // test/edges/xds/overview-examples.test.ts serves those with the test xDS server.
      if (usesDiscovery(loaded.bootstrap as Dump)) return;
      await assertServesEveryListener(loaded.bootstrap as Dump);
    });
  }
});

const ENDPOINT = (port: number) =>
  `{ endpoint: { address: { socket_address: { address: 127.0.0.1, port_value: ${port} } } } }`;
const CLUSTER = `{ name: web, load_assignment: { cluster_name: web, endpoints: [{ lb_endpoints: [${ENDPOINT(1)}] }] } }`;

function listenerYaml(name: string, filters: string, extra = ''): string {
  return `{ name: ${name}, address: { socket_address: { address: 127.0.0.1, port_value: 0 ${extra} } }, filter_chains: [{ filters: [${filters}] }] }`;
}

function hcm(httpFilters: string, extra = ''): string {
  return `{ name: proxy.filters.network.http_connection_manager, typed_config: { '@type': type.googleapis.com/envoy.config.filter.network.http_connection_manager.v2.HttpConnectionManager, stat_prefix: in, ${extra} route_config: { virtual_hosts: [{ name: all, domains: ['*'], routes: [{ match: { prefix: /healthz }, direct_response: { status: 299 } }] }] }, http_filters: [${httpFilters}] } }`;
}

async function validateYaml(yaml: string): Promise<{ status: number | null; stderr: string }> {
  return runCli(['--mode', 'validate', '--config-yaml', yaml]);
}

describe('the cases of issue 10', () => {
  it('serves filters named proxy.router, proxy.health_check, or given by @type alone', async () => {
    const listeners = [
      listenerYaml('short', hcm('{ name: proxy.router }')),
      listenerYaml(
        'health',
        hcm(
          `{ name: proxy.health_check, config: { pass_through_mode: false, headers: [{ name: ':path', exact_match: /hc }] } }, { name: proxy.router }`,
        ),
      ),
      listenerYaml(
        'typed',
        hcm(`{ typed_config: { '@type': type.googleapis.com/envoy.config.filter.http.router.v2.Router } }`),
      ),
    ];
    const yaml = `static_resources: { clusters: [${CLUSTER}], listeners: [${listeners.join(', ')}] }`;
    assert.equal((await validateYaml(yaml)).status, 0);
    const loaded = read({
      configYaml: `admin: { address: { socket_address: { address: 127.0.0.1, port_value: 0 } } }\n${yaml}`,
    });
    assert.ok(loaded.ok);
    const proxy = await startProxyProcess(loaded.bootstrap);
    try {
      for (const name of ['short', 'health', 'typed']) {
        const port = await proxy.listenerPort(name);
        assert.ok(port > 0, name);
        const res = await fetch(`http://127.0.0.1:${port}/healthz`);
        assert.equal(res.status, 299, name);
      }
      const hc = await fetch(`http://127.0.0.1:${await proxy.listenerPort('health')}/hc`);
      assert.equal(hc.status, 200, 'the health_check filter answers');
    } finally {
      await proxy.stop();
    }
  });

  it('validates and serves an HCM access_log (any spelling), writing one line per request', async () => {
    const scratch = scratchDir();
    const path = join(scratch.dir, 'access.log');
    const log = (name: string) =>
      `access_log: [{ name: ${name}, config: { path: ${path}, format: "%REQ(:PATH)% %RESPONSE_CODE%\\n" } }],`;
    const listeners = [
      listenerYaml('old', hcm('{ name: proxy.router }', log('envoy.file_access_log'))),
      listenerYaml('new', hcm('{ name: proxy.router }', log('proxy.access_loggers.file'))),
    ];
    const yaml = `static_resources: { listeners: [${listeners.join(', ')}] }`;
    const validated = await validateYaml(yaml);
    assert.equal(validated.status, 0, validated.stderr);
    const loaded = read({
      configYaml: `admin: { address: { socket_address: { address: 127.0.0.1, port_value: 0 } } }\n${yaml}`,
    });
    assert.ok(loaded.ok);
    const proxy = await startProxyProcess(loaded.bootstrap, ['--file-flush-interval-msec', '20']);
    try {
      for (const name of ['old', 'new'])
        assert.equal(
          (await fetch(`http://127.0.0.1:${await proxy.listenerPort(name)}/healthz?${name}`)).status,
          299,
        );
      const deadline = Date.now() + 5000;
      let lines: string[] = [];
      while (lines.length < 2 && Date.now() < deadline) {
        await new Promise((r) => setTimeout(r, 20));
        lines = existsSync(path) ? readFileSync(path, 'utf8').split('\n').filter(Boolean).sort() : [];
      }
      assert.deepEqual(lines, ['/healthz?new 299', '/healthz?old 299']);
    } finally {
      await proxy.stop();
      scratch.remove();
    }
  });

  it("serves the reference's load-reporting example: load reports of its local service reach the LRS server", async () => {
    const loaded = load({
      configPath: join(root, 'fixtures/real-world/load-reporting-service-envoy-w-lrs.yaml'),
    });
    assert.ok(loaded.ok);
    const lrs = await LrsServer.start();
    lrs.respond({ clusters: ['local_service'], load_reporting_interval: '0.2s' });
    const service = await new Promise<http.Server>((resolve) => {
      const server = http.createServer((_req, res) => res.end('ok'));
      server.listen(0, '127.0.0.1', () => resolve(server));
    });
    // The example's hosts (`lrs_server`, the local service) are names of its docker network: loopback here.
    const b = onFreePorts(loaded.bootstrap as Dump);
    for (const c of b.static_resources.clusters as Dump[]) {
      const address = c.load_assignment.endpoints[0].lb_endpoints[0].endpoint.address.socket_address;
      address.address = '127.0.0.1';
      address.port_value =
        c.name === 'load_reporting_cluster' ? lrs.port : (service.address() as net.AddressInfo).port;
    }
    const listener = b.static_resources.listeners[0];
    listener.address.socket_address.address = '127.0.0.1';
    listener.name = 'ingress'; // unnamed in the example: named to find its port in /listeners
    const proxy = await startProxyProcess(b, ['--concurrency', '1']);
    try {
      const port = await proxy.listenerPort('ingress');
      for (let i = 0; i < 3; i++)
        assert.equal(await (await fetch(`http://127.0.0.1:${port}/service/${i}`)).text(), 'ok');
      const reported = () =>
        lrs.reports
          .flatMap((r) => r.cluster_stats)
          .filter((c) => c.cluster_name === 'local_service')
          .flatMap((c) => c.upstream_locality_stats)
          .reduce((n, l) => n + l.total_successful_requests, 0);
      await until('3 requests reported', async () => reported() >= 3);
      // One more report: what was reported is not reported again.
      await lrs.waitFor((r) => r.cluster_stats.length > 0, lrs.reports.length);
      assert.equal(reported(), 3);
    } finally {
      await proxy.stop();
      await lrs.stop();
      service.close();
    }
  });

  it("serves the reference's zipkin-tracing example: the span of a request reaches its collector", async () => {
    const loaded = load({
      configPath: join(root, 'fixtures/real-world/zipkin-tracing-service1-envoy-zipkin.yaml'),
    });
    assert.ok(loaded.ok);
    const spans: Array<{ name: string; traceId: string; tags: Record<string, string> }> = [];
    const start = (handler: http.RequestListener) =>
      new Promise<http.Server>((resolve) => {
        const server = http.createServer(handler);
        server.listen(0, '127.0.0.1', () => resolve(server));
      });
    const collector = await start((req, res) => {
      let body = '';
      req.on('data', (d) => {
        body += d;
      });
      req.on('end', () => {
        if (req.url === '/api/v2/spans') spans.push(...JSON.parse(body));
        res.writeHead(202).end();
      });
    });
    const service = await start((_req, res) => res.end('ok'));
    // The example's hosts (`zipkin`, the local service) are names of its docker network: loopback here.
    const b = onFreePorts(loaded.bootstrap as Dump);
    const portOf = (s: http.Server) => (s.address() as net.AddressInfo).port;
    for (const c of b.static_resources.clusters as Dump[]) {
      const address = c.load_assignment.endpoints[0].lb_endpoints[0].endpoint.address.socket_address;
      address.address = '127.0.0.1';
      if (c.name === 'zipkin') address.port_value = portOf(collector);
      if (c.name === 'local_service') address.port_value = portOf(service);
    }
    const proxy = await startProxyProcess(b, ['--concurrency', '1']);
    try {
      const res = await fetch(`http://127.0.0.1:${await proxy.listenerPort('listener_0')}/trace/1`);
      assert.equal(await res.text(), 'ok');
      // The span waits for the reference's 5 s flush timer, or for the shutdown flush.
    } finally {
      await proxy.stop();
      collector.close();
      service.close();
    }
    assert.equal(spans.length, 1);
    assert.equal(spans[0]?.name, 'checkAvailability');
    assert.equal(spans[0]?.tags.upstream_cluster, 'local_service');
  });

  it("serves the reference's grpc-bridge client example: an HTTP/1.1 gRPC call through its bridge", async () => {
    const loaded = load({
      configPath: join(root, 'fixtures/real-world/grpc-bridge-client-envoy-proxy.yaml'),
    });
    assert.ok(loaded.ok);
    // The example's backend is another proxy reached over HTTP/1.1 (`http_protocol_options`),
    // which cannot carry trailers: its gRPC status comes in the head, as here.
    const seen: http.IncomingHttpHeaders[] = [];
    const backend = http.createServer((req, res) => {
      seen.push(req.headers);
      req.resume();
      req.on('end', () => {
        res.writeHead(200, { 'content-type': 'application/grpc', 'grpc-status': '0' });
        res.end(Buffer.from([0, 0, 0, 0, 2, 0x6f, 0x6b]));
      });
    });
    await new Promise<void>((resolve) => backend.listen(0, '127.0.0.1', resolve));
    const b = onFreePorts(loaded.bootstrap as Dump);
    const cluster = (b.static_resources.clusters as Dump[])[0] as Dump;
    const address = cluster.load_assignment.endpoints[0].lb_endpoints[0].endpoint.address.socket_address;
    address.address = '127.0.0.1';
    address.port_value = (backend.address() as net.AddressInfo).port;
    const listener = b.static_resources.listeners[0];
    listener.address.socket_address.address = '127.0.0.1';
    listener.name = 'bridge'; // unnamed in the example: named to find its port in /listeners
    const proxy = await startProxyProcess(b, ['--concurrency', '1']);
    try {
      const port = await proxy.listenerPort('bridge');
      // fetch cannot set Host, which the example's virtual host matches (`grpc`).
      const res = await new Promise<{ status: number; headers: http.IncomingHttpHeaders; body: Buffer }>(
        (resolve, reject) => {
          const req = http.request(
            {
              host: '127.0.0.1',
              port,
              method: 'POST',
              path: '/kv.KV/Get',
              headers: { host: 'grpc', 'content-type': 'application/grpc' },
              timeout: 5000,
            },
            (r) => {
              const chunks: Buffer[] = [];
              r.on('data', (c: Buffer) => chunks.push(c));
              r.on('end', () =>
                resolve({ status: r.statusCode ?? 0, headers: r.headers, body: Buffer.concat(chunks) }),
              );
            },
          );
          req.on('timeout', () => req.destroy(new Error('no answer in 5 s')));
          req.on('error', reject);
          req.end(Buffer.from([0, 0, 0, 0, 1, 0x6b]));
        },
      );
      assert.equal(res.status, 200);
      assert.equal(res.headers['grpc-status'], '0');
      assert.equal(res.headers['content-length'], '7');
      assert.deepEqual([...res.body], [0, 0, 0, 0, 2, 0x6f, 0x6b]);
      assert.equal(seen[0]?.['content-type'], 'application/grpc');
    } finally {
      await proxy.stop();
      backend.close();
    }
  });

  it("honours the HCM's deprecated v2 idle_timeout with one warning, as the reference does", async () => {
    const out = await validateYaml(
      `static_resources: { listeners: [${listenerYaml('l', hcm('{ name: proxy.router }', 'idle_timeout: 1s,'))}] }`,
    );
    assert.equal(out.status, 0, out.stderr);
    assert.match(
      out.stderr,
      /typed_config\.idle_timeout: deprecated: use common_http_protocol_options\.idle_timeout/,
    );
  });

  it("accepts a cluster's http_protocol_options (HTTP/1.1 upstream, the default) and refuses the settings it does not apply", async () => {
    const cluster = (options: string) =>
      `static_resources: { clusters: [{ name: h, http_protocol_options: ${options}, load_assignment: { cluster_name: h, endpoints: [{ lb_endpoints: [${ENDPOINT(1)}] }] } }] }`;
    assert.equal((await validateYaml(cluster('{}'))).status, 0);
    const refused = await validateYaml(cluster('{ header_key_format: { proper_case_words: {} } }'));
    assert.equal(refused.status, 1);
    assert.match(
      refused.stderr,
      /clusters\[0\]\.http_protocol_options\.header_key_format: header_key_format \(upstream header case\) is not implemented/,
    );
  });

  const refusals: Array<[string, string, RegExp]> = [
    [
      'an HCM with rds over ads without dynamic_resources.ads_config',
      `listeners: [${listenerYaml('l', hcm('{ name: proxy.router }', 'rds: { route_config_name: r, config_source: { ads: {} } },'))}]`,
      /filters\[0\]\.typed_config\.rds\.config_source\.ads: ads needs dynamic_resources\.ads_config/,
    ],
    [
      'an HCM with rds without its config_source',
      `listeners: [${listenerYaml('l', hcm('{ name: proxy.router }', 'rds: { route_config_name: r },'))}]`,
      /filters\[0\]\.typed_config\.rds\.config_source: required field missing/,
    ],
    [
      'a UDP listener',
      `listeners: [${listenerYaml('l', hcm('{ name: proxy.router }'), ', protocol: UDP')}]`,
      /listeners\[0\]\.address\.socket_address\.protocol: UDP listeners are not implemented/,
    ],
    [
      'weighted clusters not adding up to total_weight',
      `listeners: [{ name: l, address: { socket_address: { address: 127.0.0.1, port_value: 0 } }, filter_chains: [{ filters: [{ name: envoy.http_connection_manager, config: { stat_prefix: s, route_config: { virtual_hosts: [{ name: v, domains: ['*'], routes: [{ match: { prefix: '/' }, route: { weighted_clusters: { clusters: [{ name: a, weight: 30 }, { name: b, weight: 30 }] } } }] }] } } }] }] }]`,
      /routes\[0\]\.route\.weighted_clusters\.total_weight: is 100 but the cluster weights add up to 60/,
    ],
    [
      'an EDS cluster on ads without dynamic_resources.ads_config',
      `clusters: [{ name: e, type: EDS, eds_cluster_config: { eds_config: { ads: {} } } }]`,
      /clusters\[0\]\.eds_cluster_config\.eds_config\.ads: ads needs dynamic_resources\.ads_config/,
    ],
    [
      'an EDS cluster with a delta xDS source on a management cluster that is not static',
      `clusters: [{ name: e, type: EDS, eds_cluster_config: { eds_config: { api_config_source: { api_type: DELTA_GRPC, grpc_services: { envoy_grpc: { cluster_name: x } } } } } }]`,
      /clusters\[0\]\.eds_cluster_config\.eds_config: management cluster 'x' is not a static, non-EDS cluster of static_resources/,
    ],
    [
      'a STATIC cluster with CLUSTER_PROVIDED',
      `clusters: [{ name: o, lb_policy: CLUSTER_PROVIDED, load_assignment: { cluster_name: o, endpoints: [{ lb_endpoints: [${ENDPOINT(1)}] }] } }]`,
      /clusters\[0\]\.lb_policy: CLUSTER_PROVIDED needs a cluster that provides its balancer; type STATIC does not/,
    ],
    [
      'a health check alt_port (a HealthCheck field not implemented)',
      `clusters: [{ name: h, load_assignment: { cluster_name: h, endpoints: [{ lb_endpoints: [${ENDPOINT(1)}] }] }, health_checks: [{ timeout: 1s, interval: 1s, unhealthy_threshold: 1, healthy_threshold: 1, tcp_health_check: {}, alt_port: 8081 }] }]`,
      /clusters\[0\]\.health_checks\[0\]\.alt_port: alt_port \(a separate health check port\) is not implemented/,
    ],
    [
      'a health check without its required fields',
      `clusters: [{ name: h, load_assignment: { cluster_name: h, endpoints: [{ lb_endpoints: [${ENDPOINT(1)}] }] }, health_checks: [{ interval: 1s, http_health_check: { path: '' } }] }]`,
      /health_checks\[0\]\.timeout: required field missing[\s\S]*health_checks\[0\]\.http_health_check\.path: required field missing/,
    ],
    [
      'a TLS transport_socket on a filter chain without a certificate',
      `listeners: [{ name: l, address: { socket_address: { address: 127.0.0.1, port_value: 0 } }, filter_chains: [{ transport_socket: { name: tls, typed_config: { '@type': type.googleapis.com/envoy.api.v2.auth.DownstreamTlsContext } }, filters: [${hcm('{ name: proxy.router }')}] }] }]`,
      /filter_chains\[0\]\.transport_socket\.typed_config\.common_tls_context\.tls_certificates: a server TLS context needs a certificate/,
    ],
    [
      'a subset selector without keys',
      `clusters: [{ name: s, load_assignment: { cluster_name: s, endpoints: [{ lb_endpoints: [${ENDPOINT(1)}] }] }, lb_subset_config: { fallback_policy: ANY_ENDPOINT, subset_selectors: [{ keys: [] }] } }]`,
      /clusters\[0\]\.lb_subset_config\.subset_selectors\[0\]\.keys: a selector needs at least one key/,
    ],
  ];
  it('validates ORIGINAL_DST clusters, warning about the unsanitized header (issue 16)', async () => {
    const provided = await validateYaml(
      'static_resources: { clusters: [{ name: o, type: ORIGINAL_DST, lb_policy: CLUSTER_PROVIDED }] }',
    );
    assert.equal(provided.status, 0, provided.stderr);
    assert.equal(provided.stderr, '');
    const header = await validateYaml(
      'static_resources: { clusters: [{ name: o, type: ORIGINAL_DST, lb_policy: ORIGINAL_DST_LB, cleanup_interval: 2s, original_dst_lb_config: { use_http_header: true } }] }',
    );
    assert.equal(header.status, 0, header.stderr);
    assert.match(
      header.stderr,
      /clusters\[0\]\.original_dst_lb_config\.use_http_header: the x-proxy-original-dst-host .*header is not sanitized/,
    );
  });
  it('validates zone-aware and locality-weighted config; the local cluster must be a static one (issue 16)', async () => {
    const members = `load_assignment: { cluster_name: z, endpoints: [{ locality: { zone: a }, load_balancing_weight: 2, lb_endpoints: [${ENDPOINT(1)}] }] }`;
    const zoned = `{ name: z, ${members}, common_lb_config: { zone_aware_lb_config: { routing_enabled: { value: 50 }, min_cluster_size: 3 } } }`;
    const weighted = `{ name: w, ${members}, common_lb_config: { locality_weighted_lb_config: {} } }`;
    const ok = await validateYaml(
      `cluster_manager: { local_cluster_name: z }\nstatic_resources: { clusters: [${zoned}, ${weighted}] }`,
    );
    assert.equal(ok.status, 0, ok.stderr);
    const missing = await validateYaml(
      `cluster_manager: { local_cluster_name: nope }\nstatic_resources: { clusters: [${zoned}] }`,
    );
    assert.equal(missing.status, 1);
    assert.match(
      missing.stderr,
      /cluster_manager\.local_cluster_name: local cluster 'nope' must be defined in static_resources\.clusters/,
    );
  });
  it('validates lb_subset_config with route and weighted-cluster metadata_match (issue 16)', async () => {
    const endpoint = `{ endpoint: { address: { socket_address: { address: 127.0.0.1, port_value: 1 } } }, metadata: { filter_metadata: { proxy.lb: { version: v1, stage: [prod, canary] } } } }`;
    const subsets = `lb_subset_config: { fallback_policy: DEFAULT_SUBSET, default_subset: { version: v1 }, list_as_any: true, panic_mode_any: true, subset_selectors: [{ keys: [version] }, { keys: [stage, version], fallback_policy: NO_FALLBACK }] }`;
    const match = (v: string) => `metadata_match: { filter_metadata: { proxy.lb: { version: ${v} } } }`;
    const routes = `[{ match: { prefix: /w }, route: { ${match('v1')}, weighted_clusters: { clusters: [{ name: s, weight: 100, ${match('v2')} }] } } }, { match: { prefix: / }, route: { cluster: s, ${match('v1')} } }]`;
    const out = await validateYaml(
      `static_resources: { clusters: [{ name: s, load_assignment: { cluster_name: s, endpoints: [{ lb_endpoints: [${endpoint}] }] }, ${subsets} }], listeners: [{ name: l, address: { socket_address: { address: 127.0.0.1, port_value: 0 } }, filter_chains: [{ filters: [{ name: envoy.http_connection_manager, config: { stat_prefix: s, route_config: { virtual_hosts: [{ name: v, domains: ['*'], routes: ${routes} }] } } }] }] }] }`,
    );
    assert.equal(out.status, 0, out.stderr);
  });
  it('validates a cluster tls_context and a TLS transport_socket (issue 13)', async () => {
    for (const tls of [
      'tls_context: { sni: example.com }',
      `transport_socket: { name: proxy.transport_sockets.tls, typed_config: { '@type': type.googleapis.com/envoy.api.v2.auth.UpstreamTlsContext, sni: example.com } }`,
    ]) {
      const out = await validateYaml(
        `static_resources: { clusters: [{ name: t, load_assignment: { cluster_name: t, endpoints: [{ lb_endpoints: [${ENDPOINT(443)}] }] }, ${tls} }] }`,
      );
      assert.equal(out.status, 0, out.stderr);
    }
  });
  it('validates health checks of each kind and outlier detection (issue 14)', async () => {
    const members = `load_assignment: { cluster_name: h, endpoints: [{ lb_endpoints: [${ENDPOINT(1)}] }] }`;
    const timing = 'timeout: 1s, interval: 1s, unhealthy_threshold: 2, healthy_threshold: 1';
    for (const fields of [
      `health_checks: [{ ${timing}, http_health_check: { path: /healthz, host: h.internal, expected_statuses: [{ start: 200, end: 300 }], use_http2: true } }]`,
      `health_checks: [{ ${timing}, tcp_health_check: { send: { text: '50494e47' }, receive: [{ text: '504f4e47' }] } }]`,
      `health_checks: [{ ${timing}, no_traffic_interval: 5s, unhealthy_edge_interval: 1s, grpc_health_check: { service_name: s, authority: a } }]`,
      'outlier_detection: {}',
      'outlier_detection: { consecutive_5xx: 3, interval: 1s, base_ejection_time: 2s, max_ejection_percent: 50, split_external_local_origin_errors: true }',
    ]) {
      const out = await validateYaml(`static_resources: { clusters: [{ name: h, ${members}, ${fields} }] }`);
      assert.equal(out.status, 0, `${fields}\n${out.stderr}`);
    }
  });
  for (const [what, resources, expected] of refusals) {
    it(`refuses ${what} by name at validate`, async () => {
      const out = await validateYaml(`static_resources: { ${resources} }`);
      assert.equal(out.status, 1, out.stderr);
      assert.match(out.stderr, expected);
    });
  }

  for (const concurrency of ['1', '2']) {
    it(`fails start-up with exit 1, never LIVE, when a listener's port is taken (--concurrency ${concurrency})`, async () => {
      const holder = net.createServer();
      await new Promise<void>((resolve) => holder.listen(0, '127.0.0.1', resolve));
      const port = (holder.address() as net.AddressInfo).port;
      const scratch = scratchDir();
      try {
        const yaml = `admin: { address: { socket_address: { address: 127.0.0.1, port_value: 0 } } }
static_resources: { listeners: [${listenerYaml('taken', hcm('{ name: proxy.router }')).replace('port_value: 0', `port_value: ${port}`)}] }`;
        const config = writeFixture(scratch.dir, 'taken.yaml', yaml);
        const out = await runProxy(['-c', config, '--concurrency', concurrency], {}, 30000);
        assert.equal(out.code, 1, out.stderr);
        assert.match(
          out.stderr,
          new RegExp(`listener 'taken': cannot bind 127\\.0\\.0\\.1:${port}: EADDRINUSE`),
        );
      } finally {
        holder.close();
        scratch.remove();
      }
    });
  }
});

describe('best-practices-edge.yaml (the reference edge example)', () => {
  it('is refused only for its certificate files; with generated ones it validates and serves, overload manager running', async () => {
    const original = join(root, 'fixtures/real-world/best-practices-edge.yaml');
    const refused = load({ configPath: original });
    assert.equal(refused.ok, false);
    const errors = refused.ok ? [] : refused.errors;
    assert.equal(errors.length, 2, errors.join('\n'));
    for (const e of errors)
      assert.match(e, /tls_certificates\[0\]\.(certificate_chain|private_key)\.filename: cannot read/);
    // The same text with a certificate made here, the admin log in a scratch directory.
    const pki = makePki();
    const scratch = scratchDir();
    try {
      const leaf = pki.leaf('example.com', ['DNS:example.com', 'DNS:www.example.com']);
      const copy = join(scratch.dir, 'best-practices-edge.yaml');
      writeFileSync(
        copy,
        readFileSync(original, 'utf8')
          .replace('"example_com_cert.pem"', JSON.stringify(leaf.cert))
          .replace('"example_com_key.pem"', JSON.stringify(leaf.key))
          .replace('"/var/log/envoy_admin.log"', JSON.stringify(join(scratch.dir, 'admin.log'))),
      );
      const loaded = load({ configPath: copy });
      assert.ok(loaded.ok, loaded.ok ? '' : loaded.errors.join('\n'));
      const b = onFreePorts(loaded.bootstrap as Dump);
      b.static_resources.listeners[0].name = 'edge';
      const proxy = await startProxyProcess(b);
      try {
        assert.ok((await proxy.listenerPort('edge')) > 0);
        const stats = (await proxy.get('/stats?filter=^overload\\.')).body;
        assert.match(stats, /^overload\.envoy\.resource_monitors\.fixed_heap\.pressure: \d+$/m);
        assert.match(stats, /^overload\.envoy\.overload_actions\.shrink_heap\.active: 0$/m);
        assert.match(stats, /^overload\.envoy\.overload_actions\.stop_accepting_requests\.active: 0$/m);
      } finally {
        await proxy.stop();
      }
    } finally {
      pki.remove();
      scratch.remove();
    }
  });
});
