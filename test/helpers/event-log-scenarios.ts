/**
 * The synthetic event-log fixtures (`fixtures/<scenario>/events.ndjson`), written as a
 * recorder would: a header, then stamped envelopes. Regenerate them and their golden
 * snapshots with `node --import tsx test/helpers/event-log-scenarios.ts` after a deliberate
 * change to the reducers, and review the golden diff.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  activeHealthChanged,
  bootstrapLoaded,
  clusterAdded,
  clusterRemoved,
  drainStarted,
  type Envelope,
  hostsSet,
  hostsUpdated,
  type JsonObject,
  listenerBound,
  listenersStopped,
  outlierChanged,
  type ProxyEvent,
  runtimeModified,
  serverStateChanged,
  updateRejected,
} from '../../events/index.js';
import { envelopeLine, headerLine, LOG_FORMAT, LOG_VERSION } from '../../src/control/log-format.js';
import { replayLog } from '../../src/control/replay.js';
import { semanticView } from '../../views/snapshot-diff.js';
import { bootstrapWith, cluster, repoRoot } from './event-log.js';

/** The first `at` of every scenario: 2026-11-21T14:00:00Z. */
const T0 = Date.UTC(2026, 10, 21, 14, 0, 0);

type Step = [offsetMs: number, source: string, event: ProxyEvent];

function listener(name: string, direction?: string): JsonObject {
  return {
    name,
    address: { socket_address: { address: '127.0.0.1', port_value: 0 } },
    ...(direction ? { traffic_direction: direction } : {}),
  };
}

const host = (address: string) => {
  const [ip, port] = address.split(':');
  return {
    address,
    ip: ip as string,
    port: Number(port),
    hostname: '',
    weight: 1,
    priority: 0,
    locality: { region: '', zone: '', sub_zone: '' },
    metadata: {},
    edsHealth: 'UNKNOWN' as const,
  };
};

function boot(bootstrap: JsonObject): Step {
  return [0, 'bootstrap', bootstrapLoaded({ bootstrap, options: {}, version: 'fixture', sources: [] })];
}

const hc = (cluster: string, address: string, healthy: boolean) =>
  activeHealthChanged({ cluster, address, healthy });

/** Each scenario: the steps that make its log. */
export const SCENARIOS: Record<string, Step[]> = {
  // Flapping hosts under a 1 s merge window: flaps inside a window fold together at its end.
  'health-flaps': [
    boot(bootstrapWith([cluster('svc', ['10.0.0.1:80', '10.0.0.2:80', '10.0.0.3:80'], '1s')])),
    [5, 'server', serverStateChanged({ state: 'LIVE' })],
    [100, 'health_check', hc('svc', '10.0.0.1:80', false)],
    [300, 'health_check', hc('svc', '10.0.0.2:80', false)],
    [600, 'health_check', hc('svc', '10.0.0.1:80', true)],
    [
      900,
      'outlier',
      outlierChanged({ cluster: 'svc', address: '10.0.0.3:80', ejected: true, reason: 'consecutive_5xx' }),
    ],
    [1500, 'health_check', hc('svc', '10.0.0.2:80', true)],
    [1600, 'eds', hostsUpdated({ cluster: 'svc', updates: [{ address: '10.0.0.3:80', weight: 5 }] })],
    [4000, 'outlier', outlierChanged({ cluster: 'svc', address: '10.0.0.3:80', ejected: false, reason: '' })],
    [4100, 'health_check', hc('svc', '10.0.0.1:80', false)],
  ],
  'runtime-changes': [
    boot({
      ...bootstrapWith([cluster('svc', ['10.0.0.1:80'])]),
      layered_runtime: {
        layers: [
          { name: 'static', static_layer: { upstream: { healthy_panic_threshold: 50 } } },
          { name: 'admin', admin_layer: {} },
        ],
      },
    }),
    [10, 'admin', runtimeModified({ values: { 'upstream.healthy_panic_threshold': '20', 'x.y': '1' } })],
    [20, 'admin', runtimeModified({ values: { 'x.y': '' } })],
    [30, 'admin', runtimeModified({ values: { 'upstream.use_http2': 'true' } })],
  ],
  drain: [
    boot({
      ...bootstrapWith([cluster('svc', ['10.0.0.1:80'])]),
      static_resources: {
        clusters: [cluster('svc', ['10.0.0.1:80'])],
        listeners: [listener('in', 'INBOUND'), listener('out', 'OUTBOUND')],
      },
    }),
    [2, 'listener', listenerBound({ name: 'in', address: '127.0.0.1', port: 10001 })],
    [3, 'listener', listenerBound({ name: 'out', address: '127.0.0.1', port: 10002 })],
    [5, 'server', serverStateChanged({ state: 'LIVE' })],
    [
      1000,
      'admin',
      drainStarted({ inboundOnly: true, graceful: true, strategy: 'gradual', drainTimeMs: 600000 }),
    ],
    [601000, 'listener', listenersStopped({ names: ['in'] })],
  ],
  'cluster-churn': [
    boot(bootstrapWith([cluster('static', ['10.0.0.1:80'])])),
    [
      10,
      'cds',
      clusterAdded({ cluster: cluster('api', [], '0s') as never, addedViaApi: true, versionInfo: 'v1' }),
    ],
    [
      20,
      'eds',
      hostsSet({ cluster: 'api', hosts: [host('10.1.0.1:80'), host('10.1.0.2:80')], versionInfo: 'v1' }),
    ],
    [
      30,
      'cds',
      updateRejected({
        resource: 'cluster',
        name: 'bad',
        versionInfo: 'v2',
        errors: ['clusters[0].lb_policy: unknown value FOO'],
      }),
    ],
    [
      40,
      'eds',
      hostsSet({ cluster: 'api', hosts: [host('10.1.0.2:80'), host('10.1.0.3:80')], versionInfo: 'v3' }),
    ],
    [
      50,
      'cds',
      clusterAdded({
        cluster: cluster('batch', ['10.2.0.1:80']) as never,
        addedViaApi: true,
        versionInfo: 'v4',
      }),
    ],
    [60, 'cds', clusterRemoved({ name: 'api', versionInfo: 'v5' })],
  ],
};

/** The envelopes of a scenario, stamped from `T0`. */
export function scenarioEnvelopes(steps: Step[]): Envelope<ProxyEvent>[] {
  return steps.map(([offset, source, event], i) => ({ seq: i + 1, at: T0 + offset, source, event }));
}

/** The log text of a scenario. */
export function scenarioLog(steps: Step[]): string {
  const header = headerLine({
    format: LOG_FORMAT,
    version: LOG_VERSION,
    product: 'fixture',
    options: {},
    bootstrap: null,
    opened_at: new Date(T0).toISOString(),
  });
  return header + scenarioEnvelopes(steps).map(envelopeLine).join('');
}

/** The golden form of a final snapshot: its semantic document, pretty-printed. */
export function goldenText(state: Parameters<typeof semanticView>[0]): string {
  return `${JSON.stringify(semanticView(state), null, 1)}\n`;
}

if (process.argv[1] && import.meta.url.endsWith(process.argv[1].replace(/^.*\/test\//, '/test/'))) {
  for (const [name, steps] of Object.entries(SCENARIOS)) {
    const dir = join(repoRoot, 'fixtures', name);
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, 'events.ndjson'), scenarioLog(steps));
    const replayed = await replayLog(join(dir, 'events.ndjson'));
    writeFileSync(join(dir, 'snapshot.golden.json'), goldenText(replayed.state));
    process.stdout.write(`wrote fixtures/${name}\n`);
  }
}
