/**
 * Issue 10 item 5: `.pb` and `.pb_text` decode Struct, Value, ListValue, Any and the
 * wrapper types to exactly what the YAML path produces, and JSON/YAML accept the
 * protobuf-JSON leniencies the reference accepts (one value for a repeated field, enum names
 * in any case).
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import textformat from 'protobufjs/ext/textformat.js';
import type { JsonObject } from '../../events/index.js';
import { canonicalMessage } from '../../src/bootstrap/canonical.js';
import { Report } from '../../src/bootstrap/report.js';
import { BOOTSTRAP_TYPE, messageType } from '../../src/bootstrap/schema.js';
import { parseYamlText, readConfigFile } from '../../src/bootstrap/sources.js';
import { type Dump, errorsOf, load, root } from '../helpers/bootstrap.js';

const dir = mkdtempSync(join(tmpdir(), 'bootstrap-wkt-'));
after(() => rmSync(dir, { recursive: true, force: true }));

function file(name: string, text: string | Uint8Array): string {
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
}

/** A `.pb` with the same message as a `.pb_text`, encoded by protobufjs. */
function binaryOf(pbText: string): Uint8Array {
  const type = messageType(BOOTSTRAP_TYPE);
  return type.encode(textformat.fromText(type, pbText)).finish();
}

/** The canonical walk of one source, before the whole-bootstrap rules (those are not under test). */
function canonical(parsed: ReturnType<typeof readConfigFile>): { config: Dump; errors: string[] } {
  if (!parsed.ok) throw new Error(parsed.error);
  const report = new Report('x');
  const ctx = { report, allowUnknown: false, disabled: new Set<string>() };
  const config = canonicalMessage(parsed.json, messageType(BOOTSTRAP_TYPE), '', ctx) ?? {};
  return { config, errors: report.errors };
}

function canonicalFile(path: string) {
  return canonical(readConfigFile(path));
}

function canonicalYaml(yaml: string) {
  return canonical(parseYamlText(yaml, 'x'));
}

const HCM =
  'type.googleapis.com/envoy.config.filter.network.http_connection_manager.v2.HttpConnectionManager';

describe('Struct, Value, ListValue, Any and wrappers in .pb_text and .pb', () => {
  const pbText = `
node {
  id: "n"
  metadata {
    fields { key: "num" value { number_value: 1.5 } }
    fields { key: "zero" value { number_value: 0 } }
    fields { key: "str" value { string_value: "s" } }
    fields { key: "empty_str" value { string_value: "" } }
    fields { key: "yes" value { bool_value: true } }
    fields { key: "no" value { bool_value: false } }
    fields { key: "nothing" value { null_value: NULL_VALUE } }
    fields { key: "list" value { list_value {
      values { number_value: 1 }
      values { string_value: "x" }
      values { struct_value { fields { key: "f" value { bool_value: false } } } }
      values { list_value { } }
    } } }
    fields { key: "nested" value { struct_value {
      fields { key: "empty" value { struct_value { } } }
      fields { key: "__proto__" value { string_value: "kept" } }
      fields { key: "toString" value { number_value: 2 } }
    } } }
  }
}
static_resources {
  listeners {
    name: "l"
    address { socket_address { address: "127.0.0.1" port_value: 1 } }
    filter_chains { filters {
      name: "envoy.http_connection_manager"
      typed_config {
        [type.googleapis.com/envoy.config.filter.network.http_connection_manager.v2.HttpConnectionManager] {
          stat_prefix: "typed"
          use_remote_address { value: false }
          route_config { virtual_hosts {
            name: "v"
            domains: "*"
            routes {
              match { prefix: "/" }
              route { cluster: "c" }
              typed_per_filter_config {
                key: "envoy.router"
                value {
                  [type.googleapis.com/google.protobuf.Struct] {
                    fields { key: "k" value { list_value { values { bool_value: true } } } }
                  }
                }
              }
            }
          } }
          http_filters { name: "envoy.router" }
        }
      }
    } }
  }
  clusters {
    name: "c"
    connect_timeout { seconds: 1 }
    per_connection_buffer_limit_bytes { value: 32768 }
    load_assignment { cluster_name: "c" endpoints { lb_endpoints { endpoint { address { socket_address { address: "127.0.0.1" port_value: 2 } } } } } }
  }
}`;

  const yaml = `
node:
  id: n
  metadata:
    num: 1.5
    zero: 0
    str: s
    empty_str: ""
    yes: true
    no: false
    nothing: null
    list: [1, x, { f: false }, []]
    nested: { empty: {}, __proto__: kept, toString: 2 }
static_resources:
  listeners:
    - name: l
      address: { socket_address: { address: 127.0.0.1, port_value: 1 } }
      filter_chains:
        - filters:
            - name: envoy.http_connection_manager
              typed_config:
                "@type": ${HCM}
                stat_prefix: typed
                use_remote_address: false
                route_config:
                  virtual_hosts:
                    - name: v
                      domains: ["*"]
                      routes:
                        - match: { prefix: / }
                          route: { cluster: c }
                          typed_per_filter_config:
                            envoy.router:
                              "@type": type.googleapis.com/google.protobuf.Struct
                              value: { k: [true] }
                http_filters: [{ name: envoy.router }]
  clusters:
    - name: c
      connect_timeout: 1s
      per_connection_buffer_limit_bytes: 32768
      load_assignment: { cluster_name: c, endpoints: [{ lb_endpoints: [{ endpoint: { address: { socket_address: { address: 127.0.0.1, port_value: 2 } } } }] }] }
`;

  it('decodes to the same canonical config as the YAML, in text and in binary', () => {
    const fromYaml = canonicalYaml(yaml);
    assert.deepEqual(fromYaml.errors, []);
    const fromText = canonicalFile(file('wkt.pb_text', pbText));
    const fromBinary = canonicalFile(file('wkt.pb', binaryOf(pbText)));
    assert.deepEqual(fromText.errors, []);
    assert.deepEqual(fromText.config, fromYaml.config);
    assert.deepEqual(fromBinary.errors, []);
    assert.deepEqual(fromBinary.config, fromYaml.config);
  });

  it('keeps every Value kind, and prototype-named Struct keys as plain entries', () => {
    const { config } = canonicalFile(file('wkt2.pb_text', pbText));
    const metadata = config.node.metadata;
    assert.deepEqual(
      { ...metadata, nested: undefined },
      {
        num: 1.5,
        zero: 0,
        str: 's',
        empty_str: '',
        yes: true,
        no: false,
        nothing: null,
        list: [1, 'x', { f: false }, []],
        nested: undefined,
      },
    );
    assert.deepEqual(Object.keys(metadata.nested), ['empty', '__proto__', 'toString']);
    assert.equal(Object.getOwnPropertyDescriptor(metadata.nested, '__proto__')?.value, 'kept');
    assert.equal(Object.getPrototypeOf(metadata.nested), Object.prototype);
    const hcm = config.static_resources.listeners[0].filter_chains[0].filters[0].typed_config;
    assert.equal(hcm.use_remote_address, false, 'an explicit BoolValue false is kept');
    assert.deepEqual(hcm.route_config.virtual_hosts[0].routes[0].typed_per_filter_config, {
      'envoy.router': { '@type': 'type.googleapis.com/google.protobuf.Struct', value: { k: [true] } },
    });
  });
});

describe('the reference google_com_proxy.v2.pb_text (filter config as a v2 Struct)', () => {
  const pbTextPath = join(root, 'fixtures', 'real-world', 'google_com_proxy.v2.pb_text');
  // The same bootstrap in YAML, written as the reference's docs write a `config` Struct.
  const yaml = `
admin:
  access_log_path: /tmp/admin_access.log
  address: { socket_address: { address: 127.0.0.1, port_value: 9901 } }
static_resources:
  listeners:
    - name: listener_0
      address: { socket_address: { address: 127.0.0.1, port_value: 10000 } }
      filter_chains:
        - filters:
            - name: envoy.http_connection_manager
              config:
                stat_prefix: ingress_http
                codec_type: AUTO
                route_config:
                  name: local_route
                  virtual_hosts:
                    name: local_service
                    domains: ["*"]
                    routes:
                      match: { prefix: / }
                      route: { host_rewrite: www.google.com, cluster: service_google }
                http_filters:
                  name: envoy.router
                  config: { deprecated_v1: true }
  clusters:
    - name: service_google
      connect_timeout: 0.25s
      type: LOGICAL_DNS
      lb_policy: ROUND_ROBIN
      hosts: [{ socket_address: { address: www.google.com, port_value: 443 } }]
      tls_context: { sni: www.google.com }
`;

  it('decodes with its stat_prefix, equal to the YAML form', () => {
    const fromText = canonicalFile(pbTextPath);
    const fromYaml = canonicalYaml(yaml);
    assert.deepEqual(fromText.errors, []);
    assert.deepEqual(fromText.config, fromYaml.config);
    const hcm = fromText.config.static_resources.listeners[0].filter_chains[0].filters[0];
    assert.equal(hcm.config, undefined, 'the Struct became the typed config');
    assert.equal(hcm.typed_config['@type'], HCM);
    assert.equal(hcm.typed_config.stat_prefix, 'ingress_http');
    assert.equal(hcm.typed_config.route_config.virtual_hosts[0].routes[0].route.cluster, 'service_google');
    assert.deepEqual(hcm.typed_config.http_filters, [
      {
        name: 'envoy.router',
        typed_config: { '@type': 'type.googleapis.com/envoy.config.filter.http.router.v2.Router' },
      },
    ]);
  });

  it('no longer fails the load on stat_prefix (what is left is refused by name, if anything)', () => {
    const result = load({ configPath: pbTextPath });
    const errors = result.ok ? [] : result.errors;
    assert.equal(
      errors.find((e) => /stat_prefix|needs routes|expected a list/.test(e)),
      undefined,
      errors.join('\n'),
    );
  });

  it('refuses a non-empty v1 JSON filter config instead of misreading it', () => {
    const text = readFileSync(pbTextPath, 'utf8').replace(
      'bool_value: true',
      'bool_value: true\n} } fields { key: "dynamic_stats" value { bool_value: false',
    );
    const errors = errorsOf(load({ configPath: file('v1.pb_text', text) }));
    assert.ok(
      errors.some((e) =>
        /http_filters\.config\.deprecated_v1: .*v1 JSON format.*not supported by this build/.test(e),
      ),
      errors.join('\n'),
    );
  });
});

describe('protobuf-JSON leniencies in JSON and YAML', () => {
  for (const name of ['v2-overview-dynamic.yaml', 'v2-overview-mostly-static-eds.yaml']) {
    it(`${name}: one object for repeated grpc_services is a one-element list`, () => {
      const result = load({ configPath: join(root, 'fixtures', 'real-world', name) });
      const errors = result.ok ? [] : result.errors;
      assert.equal(
        errors.find((e) => /expected a list/.test(e)),
        undefined,
        errors.join('\n'),
      );
      const { config } = canonicalFile(join(root, 'fixtures', 'real-world', name));
      const source =
        config.dynamic_resources?.cds_config ??
        config.static_resources.clusters[0].eds_cluster_config.eds_config;
      assert.deepEqual(source.api_config_source.grpc_services, [
        { envoy_grpc: { cluster_name: 'xds_cluster' } },
      ]);
    });
  }

  it('one scalar for a repeated scalar, lower-case enum names, in JSON too', () => {
    const json: JsonObject = {
      static_resources: {
        clusters: [
          {
            name: 'c',
            connect_timeout: '1s',
            type: 'strict_dns',
            lb_policy: 'least_request',
            dns_lookup_family: 'v4_only',
            load_assignment: {
              cluster_name: 'c',
              endpoints: {
                lb_endpoints: {
                  endpoint: { address: { socket_address: { address: 'localhost', port_value: 1 } } },
                },
              },
            },
          },
        ],
      },
    };
    const { config, errors } = canonicalFile(file('lenient.json', JSON.stringify(json)));
    assert.deepEqual(errors, []);
    const cluster = config.static_resources.clusters[0];
    assert.equal(cluster.type, 'STRICT_DNS');
    assert.equal(cluster.lb_policy, 'LEAST_REQUEST');
    assert.equal(cluster.dns_lookup_family, 'V4_ONLY');
    assert.equal(cluster.load_assignment.endpoints.length, 1);
    assert.equal(
      cluster.load_assignment.endpoints[0].lb_endpoints[0].endpoint.address.socket_address.port_value,
      1,
    );
    const domains = canonicalYaml(
      'static_resources: { listeners: [{ name: l, address: { socket_address: { address: 127.0.0.1, port_value: 1 } }, filter_chains: { filters: { name: envoy.http_connection_manager, typed_config: { "@type": "' +
        HCM +
        '", stat_prefix: s, route_config: { virtual_hosts: { name: v, domains: "*" } } } } } }] }',
    );
    assert.deepEqual(domains.errors, []);
    assert.deepEqual(
      domains.config.static_resources.listeners[0].filter_chains[0].filters[0].typed_config.route_config
        .virtual_hosts[0].domains,
      ['*'],
    );
  });

  it('a wrong shape inside the single value is still reported with its path', () => {
    const { errors } = canonicalYaml('static_resources: { clusters: { name: c, connect_timeout: soon } }');
    assert.deepEqual(errors, [
      "x: static_resources.clusters.connect_timeout: expected a duration like '0.25s' or '5s', got string \"soon\"",
    ]);
  });
});
