/**
 * Loading and validating a 1,000-cluster bootstrap: wall time of `loadBootstrap` on the
 * same bootstrap as YAML, JSON and binary proto3 (schema parsing excluded: it happens
 * once per process and is timed as its own row). Run alone: `node --import tsx bench/validate.ts`
 * (or `npm run bench -- validate`); it prints markdown table rows.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { stringify } from 'yaml';
import { loadBootstrap } from '../src/bootstrap/load.js';
import { messageType, schemaRoot } from '../src/bootstrap/schema.js';
import type { BenchRow } from './types.js';

const CLUSTERS = 1000;
const RUNS = 5;
const POLICIES = ['ROUND_ROBIN', 'LEAST_REQUEST', 'RING_HASH', 'RANDOM'];

/** A bootstrap with `CLUSTERS` clusters of mixed policies, each with two endpoints and the usual blocks. */
function bigBootstrap(): Record<string, unknown> {
  const clusters = Array.from({ length: CLUSTERS }, (_, i) => {
    const lbPolicy = POLICIES[i % POLICIES.length]!;
    return {
      name: `cluster_${i}`,
      connect_timeout: '0.25s',
      type: i % 2 === 0 ? 'STATIC' : 'STRICT_DNS',
      lb_policy: lbPolicy,
      ...(lbPolicy === 'RING_HASH' ? { ring_hash_lb_config: { minimum_ring_size: 1024 } } : {}),
      ...(lbPolicy === 'LEAST_REQUEST' ? { least_request_lb_config: { choice_count: 3 } } : {}),
      circuit_breakers: { thresholds: [{ max_connections: 100, max_requests: 100 }] },
      outlier_detection: { consecutive_5xx: 5, interval: '10s' },
      health_checks: [
        {
          timeout: '1s',
          interval: '5s',
          unhealthy_threshold: 2,
          healthy_threshold: 1,
          http_health_check: { path: '/h' },
        },
      ],
      load_assignment: {
        cluster_name: `cluster_${i}`,
        endpoints: [
          {
            lb_endpoints: [8080, 8081].map((port) => ({
              endpoint: {
                address: {
                  socket_address: { address: i % 2 === 0 ? '10.0.0.1' : 'backend.local', port_value: port },
                },
              },
            })),
          },
        ],
      },
    };
  });
  return {
    admin: { address: { socket_address: { address: '127.0.0.1', port_value: 0 } } },
    static_resources: { clusters },
  };
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
}

function timeLoad(configPath: string): number {
  const times: number[] = [];
  for (let run = 0; run < RUNS; run++) {
    const start = performance.now();
    const result = loadBootstrap({
      configPath,
      configYaml: '',
      allowUnknownStaticFields: false,
      disableExtensions: [],
    });
    times.push(performance.now() - start);
    if (!result.ok) throw new Error(`bench bootstrap invalid: ${result.errors[0]}`);
  }
  return median(times);
}

/** Median wall time of `loadBootstrap` on a 1,000-cluster bootstrap in three formats. */
export async function benchValidate(): Promise<BenchRow[]> {
  const schemaStart = performance.now();
  schemaRoot();
  const schemaMs = performance.now() - schemaStart;
  const dir = mkdtempSync(join(tmpdir(), 'bench-validate-'));
  try {
    const bootstrap = bigBootstrap();
    const files = { yaml: join(dir, 'b.yaml'), json: join(dir, 'b.json'), pb: join(dir, 'b.pb') };
    writeFileSync(files.yaml, stringify(bootstrap));
    writeFileSync(files.json, JSON.stringify(bootstrap));
    const type = messageType('envoy.config.bootstrap.v2.Bootstrap');
    writeFileSync(files.pb, type.encode(type.fromObject(protoObject(bootstrap))).finish());
    return [
      { name: 'schema parse (once per process)', value: schemaMs, unit: 'ms' },
      ...Object.entries(files).map(([format, path]) => ({
        name: `load+validate ${CLUSTERS} clusters (${format})`,
        value: timeLoad(path),
        unit: 'ms',
      })),
    ];
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The JSON bootstrap in the object form protobufjs `fromObject` takes (wrappers and durations as messages). */
function protoObject(bootstrap: Record<string, unknown>): Record<string, unknown> {
  const wrap = (v: unknown) => ({ value: v });
  const seconds = (text: string) => {
    const s = Number.parseFloat(text);
    return { seconds: Math.trunc(s), nanos: Math.round((s % 1) * 1e9) };
  };
  const resources = bootstrap.static_resources as { clusters: Array<Record<string, unknown>> };
  const clusters = resources.clusters.map((c) => ({
    ...c,
    connect_timeout: seconds(String(c.connect_timeout)),
    ...(c.ring_hash_lb_config ? { ring_hash_lb_config: { minimum_ring_size: wrap(1024) } } : {}),
    ...(c.least_request_lb_config ? { least_request_lb_config: { choice_count: wrap(3) } } : {}),
    circuit_breakers: { thresholds: [{ max_connections: wrap(100), max_requests: wrap(100) }] },
    outlier_detection: { consecutive_5xx: wrap(5), interval: seconds('10s') },
    health_checks: [
      {
        timeout: seconds('1s'),
        interval: seconds('5s'),
        unhealthy_threshold: wrap(2),
        healthy_threshold: wrap(1),
        http_health_check: { path: '/h' },
      },
    ],
  }));
  return { ...bootstrap, static_resources: { clusters } };
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  console.log('| figure | value | unit |\n|---|---:|---|');
  for (const row of await benchValidate())
    console.log(`| ${row.name} | ${row.value.toFixed(1)} | ${row.unit} |`);
}
