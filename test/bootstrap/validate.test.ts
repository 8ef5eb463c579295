import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import {
  bootstrapOf,
  type Dump,
  errorsOf,
  fixture,
  load,
  loadYaml,
  read,
  runCli,
} from '../helpers/bootstrap.js';

/** A cluster type that needs no members: its endpoints come from a file source. */
const EDS = 'type: EDS, eds_cluster_config: { eds_config: { path: /etc/proxy/eds.yaml } }';

const ENDPOINT = '{ endpoint: { address: { socket_address: { address: 127.0.0.1, port_value: 80 } } } }';
const MEMBERS = `load_assignment: { endpoints: [{ lb_endpoints: [${ENDPOINT}] }] }`;

/** One static cluster whose body is `fields` (YAML flow mapping entries). */
function cluster(fields: string): string {
  return `static_resources: { clusters: [{ name: c, ${MEMBERS}, ${fields} }] }`;
}

function listener(filter: string, extra = ''): string {
  return `static_resources: { listeners: [{ ${extra} address: { socket_address: { address: 127.0.0.1, port_value: 0 } }, filter_chains: [{ filters: [${filter}] }] }] }`;
}

const HCM_BODY = 'stat_prefix: h, route_config: { name: r }, http_filters: [{ name: envoy.router }]';
type Obj = Dump;
const firstFilter = (b: Obj) => b.static_resources.listeners[0].filter_chains[0].filters[0];

describe('cluster validation rules', () => {
  it('requires name', () => {
    const errors = errorsOf(loadYaml(`static_resources: { clusters: [{ ${EDS} }] }`));
    assert.deepEqual(errors, [
      '--config-yaml: static_resources.clusters[0].name: required field missing: every cluster needs a unique name',
    ]);
  });

  it('allows only one of type and cluster_type', () => {
    const errors = errorsOf(
      loadYaml(cluster('type: STATIC, cluster_type: { name: envoy.clusters.aggregate }')),
    );
    assert.ok(
      errors.some((e) =>
        /static_resources\.clusters\[0\]: only one of type, cluster_type may be set/.test(e),
      ),
      errors.join('\n'),
    );
  });

  it('allows only one of the lb_config group', () => {
    const errors = errorsOf(
      loadYaml(cluster('lb_policy: RING_HASH, ring_hash_lb_config: {}, least_request_lb_config: {}')),
    );
    assert.ok(
      errors.some((e) =>
        e.includes(
          'clusters[0]: only one of ring_hash_lb_config, original_dst_lb_config, least_request_lb_config may be set',
        ),
      ),
      errors.join('\n'),
    );
  });

  it('rejects ring_hash_lb_config / least_request_lb_config without the matching lb_policy', () => {
    assert.match(
      errorsOf(loadYaml(cluster('ring_hash_lb_config: {}')))[0]!,
      /clusters\[0\]\.ring_hash_lb_config: set but lb_policy is ROUND_ROBIN; it needs lb_policy RING_HASH/,
    );
    assert.match(
      errorsOf(loadYaml(cluster('lb_policy: RANDOM, least_request_lb_config: {}')))[0]!,
      /clusters\[0\]\.least_request_lb_config: set but lb_policy is RANDOM; it needs lb_policy LEAST_REQUEST/,
    );
  });

  it('limits ring sizes to 8M and reports minimum above maximum in the reference wording', () => {
    const errors = errorsOf(
      loadYaml(
        cluster(
          'lb_policy: RING_HASH, ring_hash_lb_config: { minimum_ring_size: 9000000, maximum_ring_size: 8388609 }',
        ),
      ),
    );
    assert.deepEqual(errors, [
      '--config-yaml: static_resources.clusters[0].ring_hash_lb_config.minimum_ring_size: 9000000 exceeds the limit 8388608 (8M)',
      '--config-yaml: static_resources.clusters[0].ring_hash_lb_config.maximum_ring_size: 8388609 exceeds the limit 8388608 (8M)',
      '--config-yaml: static_resources.clusters[0].ring_hash_lb_config: ring hash: minimum_ring_size (9000000) > maximum_ring_size (8388609)',
    ]);
    const defaults = errorsOf(
      loadYaml(cluster('lb_policy: RING_HASH, ring_hash_lb_config: { maximum_ring_size: 512 }')),
    );
    assert.match(defaults[0]!, /ring hash: minimum_ring_size \(1024\) > maximum_ring_size \(512\)/);
    bootstrapOf(
      loadYaml(cluster('lb_policy: RING_HASH, ring_hash_lb_config: { minimum_ring_size: 8388608 }')),
    );
  });

  it('rejects invalid enum values and reads enum names in any case', () => {
    const errors = errorsOf(loadYaml(cluster('lb_policy: FASTEST')));
    assert.match(
      errors[0]!,
      /clusters\[0\]\.lb_policy: invalid value string "FASTEST" for envoy\.api\.v2\.Cluster\.LbPolicy \(expected one of ROUND_ROBIN, /,
    );
    const b = bootstrapOf(
      loadYaml(
        `static_resources: { clusters: [{ name: c, type: strict_dns, lb_policy: least_request, dns_lookup_family: v4_only, ${MEMBERS} }] }`,
      ),
    ) as Obj;
    const c = b.static_resources.clusters[0];
    assert.deepEqual([c.type, c.lb_policy, c.dns_lookup_family], ['STRICT_DNS', 'LEAST_REQUEST', 'V4_ONLY']);
  });

  it('requires weights >= 1 and percents in 0..100', () => {
    const weights = errorsOf(
      loadYaml(
        `static_resources: { clusters: [{ name: c, load_assignment: { endpoints: [{ load_balancing_weight: 0, lb_endpoints: [{ endpoint: { address: { socket_address: { address: 127.0.0.1, port_value: 1 } } }, load_balancing_weight: 0 }] }] } }] }`,
      ),
    );
    assert.deepEqual(weights, [
      '--config-yaml: static_resources.clusters[0].load_assignment.endpoints[0].load_balancing_weight: must be >= 1',
      '--config-yaml: static_resources.clusters[0].load_assignment.endpoints[0].lb_endpoints[0].load_balancing_weight: must be >= 1',
    ]);
    const percents = errorsOf(
      loadYaml(
        cluster(
          'common_lb_config: { healthy_panic_threshold: { value: 101 } }, outlier_detection: { max_ejection_percent: 150 }',
        ),
      ),
    );
    assert.deepEqual(percents, [
      '--config-yaml: static_resources.clusters[0].common_lb_config.healthy_panic_threshold.value: percent 101 is not in 0..100',
      '--config-yaml: static_resources.clusters[0].outlier_detection.max_ejection_percent: 150 is not in 0..100',
    ]);
  });

  it('rejects negative durations and malformed ones', () => {
    const errors = errorsOf(loadYaml(cluster('connect_timeout: -1s, dns_refresh_rate: 5 seconds')));
    assert.deepEqual(errors, [
      '--config-yaml: static_resources.clusters[0].connect_timeout: duration -1s is negative; durations must be >= 0s',
      `--config-yaml: static_resources.clusters[0].dns_refresh_rate: expected a duration like '0.25s' or '5s', got string "5 seconds"`,
    ]);
  });

  it('requires members for STATIC, STRICT_DNS and LOGICAL_DNS, not for EDS', () => {
    for (const type of ['STATIC', 'STRICT_DNS', 'LOGICAL_DNS']) {
      const errors = errorsOf(loadYaml(`static_resources: { clusters: [{ name: c, type: ${type} }] }`));
      assert.deepEqual(errors, [
        `--config-yaml: static_resources.clusters[0]: a ${type} cluster needs members: set load_assignment (or the deprecated hosts)`,
      ]);
    }
    bootstrapOf(loadYaml(`static_resources: { clusters: [{ name: c, ${EDS} }] }`));
  });

  it('accepts eds_cluster_config only with type EDS', () => {
    const errors = errorsOf(loadYaml(cluster('eds_cluster_config: { service_name: s }')));
    assert.match(
      errors[0]!,
      /clusters\[0\]\.eds_cluster_config: is valid only with type EDS \(this cluster is STATIC\)/,
    );
  });

  it('accepts deprecated hosts with a warning, overridden by load_assignment', () => {
    const hostsOnly = load({
      configYaml: `static_resources: { clusters: [{ name: c, hosts: [{ socket_address: { address: 127.0.0.1, port_value: 1 } }] }] }`,
    });
    assert.ok(hostsOnly.ok);
    assert.deepEqual(hostsOnly.warnings, [
      "--config-yaml: static_resources.clusters[0].hosts: using deprecated option 'envoy.api.v2.Cluster.hosts' (use load_assignment; when both are set load_assignment wins)",
    ]);
    const both = load({
      configYaml: cluster('hosts: [{ socket_address: { address: 10.1.1.1, port_value: 1 } }]'),
    });
    assert.ok(both.ok);
    assert.ok(
      both.warnings.some((w) => /clusters\[0\]\.hosts: ignored: load_assignment is also set/.test(w)),
      both.warnings.join('\n'),
    );
  });

  it('requires unique cluster and listener names', () => {
    const hcm = `{ name: envoy.http_connection_manager, config: { ${HCM_BODY} } }`;
    const listeners = `listeners: [{ name: l, address: { socket_address: { address: 127.0.0.1 } }, filter_chains: [{ filters: [${hcm}] }] }, { name: l, address: { socket_address: { address: 127.0.0.1 } }, filter_chains: [{ filters: [${hcm}] }] }]`;
    const errors = errorsOf(
      loadYaml(`static_resources: { clusters: [{ name: a, ${EDS} }, { name: a, ${EDS} }], ${listeners} }`),
    );
    assert.deepEqual(errors, [
      "--config-yaml: static_resources.clusters[1].name: duplicate cluster name 'a' (first defined at static_resources.clusters[0])",
      "--config-yaml: static_resources.listeners[1].name: duplicate listener name 'l' (first defined at static_resources.listeners[0])",
    ]);
  });

  it('collects every error of a file, each with its path, in every format', () => {
    for (const ext of ['yaml', 'json', 'pb_text', 'pb']) {
      const errors = errorsOf(load({ configPath: fixture(`invalid.${ext}`) }));
      assert.equal(errors.length, 9, errors.join('\n'));
      for (const e of errors) assert.ok(e.startsWith(`${fixture(`invalid.${ext}`)}: static_resources.`), e);
      assert.ok(
        errors.some((e) => e.endsWith('ring hash: minimum_ring_size (5000) > maximum_ring_size (1024)')),
      );
    }
  });

  it('collects field errors and whole-config errors in one pass', () => {
    const errors = errorsOf(
      loadYaml(`static_resources: { clusters: [{ nmae: x, ${EDS} }, { name: b, lb_policy: nope, ${EDS} }] }`),
    );
    assert.equal(errors.length, 3, errors.join('\n'));
    assert.match(errors[0]!, /clusters\[0\]\.nmae: unknown field 'nmae' in envoy\.api\.v2\.Cluster/);
    assert.match(errors[1]!, /clusters\[1\]\.lb_policy: invalid value/);
    assert.match(errors[2]!, /clusters\[0\]\.name: required field missing/);
  });
});

describe('the admin address', () => {
  // The reference reads admin.address as it reads a listener's, an IP with no lookup, and
  // refuses a host name at start-up ("malformed IP address"); it was taken here and bound.
  const admin = (address: string) =>
    `admin: { address: { socket_address: { address: ${address}, port_value: 0 } } }`;

  it('refuses a host name, naming the field', () => {
    const errors = errorsOf(loadYaml(admin('localhost')));
    assert.equal(errors.length, 1, errors.join('\n'));
    assert.match(
      errors[0]!,
      /^--config-yaml: admin\.address\.socket_address\.address: malformed IP address: localhost \(the admin listener binds an IP/,
    );
  });

  it('takes IPv4 and IPv6 literals and a pipe', () => {
    for (const yaml of [
      ...['127.0.0.1', '0.0.0.0', "'::1'", "'::'"].map(admin),
      'admin: { address: { pipe: { path: /tmp/a.sock } } }',
    ]) {
      const result = loadYaml(yaml);
      assert.ok(result.ok, `${yaml}: ${result.ok ? '' : result.errors.join('\n')}`);
    }
  });

  it('--mode validate and serve exit 1 naming the path of an admin bound to a host name', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'admin-address-'));
    try {
      const file = join(dir, 'bootstrap.yaml');
      writeFileSync(file, admin('localhost'));
      for (const args of [
        ['--mode', 'validate', '-c', file],
        ['-c', file],
      ]) {
        const run = await runCli(args);
        assert.equal(run.status, 1, `${args.join(' ')}: ${run.stdout}${run.stderr}`);
        assert.match(run.stderr, /admin\.address\.socket_address\.address: malformed IP address: localhost/);
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('unknown fields', () => {
  const yaml = `admin: { bogus: 1, address: { socket_address: { address: 127.0.0.1, nope: 2 } } }
static_resources: { clusters: [{ name: a, ${EDS}, bogus: 3 }, { name: b, ${EDS}, bogus: 4 }] }`;

  it('are rejected by default, each with its path', () => {
    const errors = errorsOf(loadYaml(yaml));
    assert.equal(errors.length, 4);
    assert.match(
      errors[0]!,
      /^--config-yaml: admin\.bogus: unknown field 'bogus' in envoy\.config\.bootstrap\.v2\.Admin \(check the spelling, or pass --allow-unknown-static-fields/,
    );
    assert.match(
      errors[3]!,
      /static_resources\.clusters\[1\]\.bogus: unknown field 'bogus' in envoy\.api\.v2\.Cluster/,
    );
  });

  it('are warned once per field and counted with allowUnknownStaticFields', () => {
    const result = read({ configYaml: yaml, allowUnknownStaticFields: true });
    assert.ok(result.ok);
    assert.equal(result.unknownFields, 4);
    assert.equal(result.warnings.length, 3, result.warnings.join('\n'));
    assert.deepEqual((result.bootstrap.static_resources as Obj).clusters[0], {
      name: 'a',
      type: 'EDS',
      eds_cluster_config: { eds_config: { path: '/etc/proxy/eds.yaml' } },
    });
  });
});

describe('extensions and type URLs', () => {
  it('accepts short and long names, envoy. and proxy., config and typed_config', () => {
    for (const name of [
      'envoy.http_connection_manager',
      'envoy.filters.network.http_connection_manager',
      'proxy.http_connection_manager',
      'proxy.filters.network.http_connection_manager',
    ]) {
      for (const form of [
        `config: { ${HCM_BODY} }`,
        `typed_config: { "@type": type.googleapis.com/envoy.config.filter.network.http_connection_manager.v2.HttpConnectionManager, ${HCM_BODY} }`,
      ]) {
        const b = bootstrapOf(loadYaml(listener(`{ name: ${name}, ${form} }`))) as Obj;
        const filter = firstFilter(b);
        assert.equal(filter.name, name);
        assert.equal(filter.config, undefined);
        assert.equal(filter.typed_config.stat_prefix, 'h');
        assert.equal(
          filter.typed_config['@type'],
          'type.googleapis.com/envoy.config.filter.network.http_connection_manager.v2.HttpConnectionManager',
        );
      }
    }
  });

  it('resolves v2, v3 and proxy. type URLs to the same message', () => {
    const urls = [
      'type.googleapis.com/envoy.config.filter.network.http_connection_manager.v2.HttpConnectionManager',
      'type.googleapis.com/proxy.config.filter.network.http_connection_manager.v2.HttpConnectionManager',
      'type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager',
      'type.googleapis.com/proxy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager',
    ];
    const router = [
      'envoy.extensions.filters.http.router.v3.Router',
      'proxy.config.filter.http.router.v2.Router',
    ];
    const dumps = urls.map((url, i) => {
      const filter = `{ name: x, typed_config: { "@type": ${url}, stat_prefix: h, route_config: { name: r }, http_filters: [{ name: envoy.filters.http.router, typed_config: { "@type": type.googleapis.com/${router[i % 2]} } }] } }`;
      return JSON.stringify(firstFilter(bootstrapOf(loadYaml(listener(filter))) as Obj).typed_config);
    });
    for (const d of dumps) assert.equal(d, dumps[0]);
  });

  it('resolves v3 and proxy. names inside text-proto Any expansion', () => {
    const text = `static_resources { listeners { address { socket_address { address: "127.0.0.1" } }
      filter_chains { filters { name: "proxy.tcp_proxy" typed_config {
        [type.googleapis.com/envoy.extensions.filters.network.tcp_proxy.v3.TcpProxy] { stat_prefix: "t" cluster: "c" } } } } } }`;
    const b = bootstrapOf(loadPbText(text)) as Obj;
    assert.deepEqual(firstFilter(b).typed_config, {
      '@type': 'type.googleapis.com/envoy.config.filter.network.tcp_proxy.v2.TcpProxy',
      stat_prefix: 't',
      cluster: 'c',
    });
  });

  it('allows typed_config: {} and no config at all for the router', () => {
    const b = bootstrapOf(
      loadYaml(
        listener(
          `{ name: envoy.filters.network.http_connection_manager, config: { stat_prefix: h, route_config: { name: r }, http_filters: [{ name: envoy.filters.http.router, typed_config: {} }, { name: proxy.router }] } }`,
        ),
      ),
    ) as Obj;
    const filters = firstFilter(b).typed_config.http_filters;
    for (const f of filters)
      assert.equal(f.typed_config['@type'], 'type.googleapis.com/envoy.config.filter.http.router.v2.Router');
  });

  it('rejects an extension this build does not have, naming it', () => {
    const errors = errorsOf(
      loadYaml(listener('{ name: envoy.filters.network.redis_proxy, config: { stat_prefix: r } }')),
    );
    assert.deepEqual(errors, [
      "--config-yaml: static_resources.listeners[0].filter_chains[0].filters[0].name: unknown extension 'envoy.filters.network.redis_proxy' in category envoy.filters.network: not implemented by this build",
    ]);
  });

  it('picks the extension by the @type of its config, as the reference does, not by a name that disagrees', () => {
    // Root cause: the name was looked up first, so the reference's single-page-app example
    // (`name: envoy.access_loggers.stdout` with a StderrAccessLog config) was refused.
    const b = bootstrapOf(
      loadYaml(`
admin:
  address: { socket_address: { address: 127.0.0.1, port_value: 0 } }
  access_log:
  - name: envoy.access_loggers.stdout
    typed_config: { "@type": type.googleapis.com/envoy.extensions.access_loggers.stream.v3.StderrAccessLog }
`),
    ) as Obj;
    const log = b.admin.access_log[0];
    assert.equal(
      log.typed_config['@type'],
      'type.googleapis.com/envoy.extensions.access_loggers.stream.v3.StderrAccessLog',
    );
  });

  it('reads the v3 ZipkinConfig as the Zipkin tracer', () => {
    const b = bootstrapOf(
      loadYaml(`
tracing:
  http:
    name: envoy.tracers.zipkin
    typed_config: { "@type": type.googleapis.com/envoy.config.trace.v3.ZipkinConfig, collector_cluster: z, collector_endpoint: /api/v2/spans, collector_endpoint_version: HTTP_JSON }
static_resources:
  clusters:
  - { name: z, connect_timeout: 1s, load_assignment: { cluster_name: z } }
`),
    ) as Obj;
    assert.equal(
      b.tracing.http.typed_config['@type'],
      'type.googleapis.com/envoy.config.trace.v2.ZipkinConfig',
    );
    assert.equal(b.tracing.http.typed_config.collector_endpoint_version, 'HTTP_JSON');
  });

  it('rejects an unknown type URL, naming it', () => {
    const errors = errorsOf(
      loadYaml(
        listener(
          '{ name: envoy.tcp_proxy, typed_config: { "@type": type.googleapis.com/envoy.config.filter.network.redis_proxy.v2.RedisProxy } }',
        ),
      ),
    );
    assert.match(
      errors[0]!,
      /filters\[0\]\.typed_config\.@type: unknown type URL 'type\.googleapis\.com\/envoy\.config\.filter\.network\.redis_proxy\.v2\.RedisProxy'/,
    );
  });

  it('checks the converted config of a deprecated Struct for unknown fields', () => {
    const errors = errorsOf(
      loadYaml(listener('{ name: envoy.tcp_proxy, config: { stat_prefix: t, cluster: c, clusterr: d } }')),
    );
    assert.match(
      errors[0]!,
      /filters\[0\]\.config\.clusterr: unknown field 'clusterr' in envoy\.config\.filter\.network\.tcp_proxy\.v2\.TcpProxy/,
    );
  });

  it('makes configs using disabled extensions invalid (any spelling)', () => {
    const yaml = listener('{ name: proxy.tcp_proxy, config: { stat_prefix: t, cluster: c } }');
    for (const entry of [
      'envoy.filters.network/envoy.tcp_proxy',
      'proxy.filters.network/proxy.filters.network.tcp_proxy',
    ]) {
      const errors = errorsOf(loadYaml(yaml, { disableExtensions: [entry] }));
      assert.match(
        errors[0]!,
        /filters\[0\]\.name: extension 'proxy\.tcp_proxy' is disabled by --disable-extensions \(envoy\.filters\.network\/envoy\.filters\.network\.tcp_proxy\)/,
      );
    }
    const other = loadYaml(yaml, { disableExtensions: ['envoy.filters.http/envoy.router', 'nonsense'] });
    assert.ok(other.ok);
    assert.match(other.warnings[0]!, /--disable-extensions: 'nonsense' names no extension of this build/);
  });

  it('accepts protocol: TCP and generates names for unnamed listeners', () => {
    const tcp = '{ name: envoy.tcp_proxy, config: { stat_prefix: t, cluster: c } }';
    const one = `{ address: { socket_address: { protocol: TCP, address: 127.0.0.1, port_value: 0 } }, filter_chains: [{ filters: [${tcp}] }] }`;
    const named = `{ name: listener_1, address: { socket_address: { address: 127.0.0.1 } }, filter_chains: [{ filters: [${tcp}] }] }`;
    const b = bootstrapOf(loadYaml(`static_resources: { listeners: [${one}, ${named}, ${one}] }`)) as Obj;
    assert.deepEqual(
      b.static_resources.listeners.map((l: Obj) => l.name),
      ['listener_0', 'listener_1', 'listener_2'],
    );
    assert.equal(
      b.static_resources.listeners[0].address.socket_address.protocol,
      undefined,
      'TCP is the default',
    );
  });

  it('reads 64-bit integers given as numbers or strings', () => {
    const b = bootstrapOf(
      loadYaml(
        cluster(
          'lb_policy: RING_HASH, ring_hash_lb_config: { minimum_ring_size: 2048, maximum_ring_size: "4096" }',
        ),
      ),
    ) as Obj;
    assert.deepEqual(b.static_resources.clusters[0].ring_hash_lb_config, {
      minimum_ring_size: '2048',
      maximum_ring_size: '4096',
    });
  });
});

function loadPbText(text: string) {
  const dir = mkdtempSync(join(tmpdir(), 'bootstrap-pbtext-'));
  try {
    const path = join(dir, 'b.pb_text');
    writeFileSync(path, text);
    return load({ configPath: path });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
