import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  activeHealthChanged,
  bootstrapLoaded,
  drainStarted,
  type Envelope,
  hostsSet,
  hostsUpdated,
  outlierChanged,
  type ProxyEvent,
  runtimeModified,
} from '../../../events/index.js';
import { eventTypes } from '../../../reducers/index.js';
import { matchesFilter, NO_FILTER } from '../../../views/events/filter.js';
import { SUMMARIZED_TYPES, summarize } from '../../../views/events/summary.js';

const AT = Date.UTC(2026, 10, 23, 9, 0);
const env = (event: ProxyEvent, seq = 1, source = 'test'): Envelope<ProxyEvent> => ({
  seq,
  at: AT,
  source,
  event,
});
const host = (address: string) => ({
  address,
  ip: address.split(':')[0] as string,
  port: Number(address.split(':')[1]),
  hostname: '',
  weight: 1,
  priority: 0,
  locality: { region: '', zone: '', sub_zone: '' },
  metadata: {},
  edsHealth: 'UNKNOWN' as const,
});

test('every event type the reducer knows has a summary', () => {
  assert.deepEqual([...SUMMARIZED_TYPES].sort(), [...eventTypes].sort());
});

test('summaries say what happened to whom', () => {
  assert.equal(
    summarize(
      env(
        outlierChanged({ cluster: 'api', address: '10.0.0.3:80', ejected: true, reason: 'consecutive_5xx' }),
      ),
    ).text,
    'cluster api: host 10.0.0.3:80 ejected by outlier detection (consecutive 5xx)',
  );
  assert.equal(
    summarize(env(activeHealthChanged({ cluster: 'api', address: '10.0.0.3:80', healthy: true }))).text,
    'cluster api: host 10.0.0.3:80 passes its active health check again',
  );
  assert.equal(
    summarize(env(runtimeModified({ values: { 'feature.canary': 'on', 'old.key': '' } }))).text,
    'runtime (admin layer): feature.canary=on, old.key removed',
  );
  assert.equal(
    summarize(
      env(drainStarted({ inboundOnly: true, graceful: true, strategy: 'gradual', drainTimeMs: 600_000 })),
    ).text,
    'listeners start draining (graceful, 600 s, gradual, inbound listeners only)',
  );
  const set = summarize(
    env(hostsSet({ cluster: 'api', hosts: ['a:1', 'b:1', 'c:1', 'd:1'].map(host), versionInfo: '' })),
  );
  assert.equal(set.text, 'cluster api: members set to 4 hosts (a:1, b:1, c:1 and 1 more)');
  assert.deepEqual(set.hosts, ['a:1', 'b:1', 'c:1', 'd:1']);
  const boot = summarize(
    env(
      bootstrapLoaded({
        bootstrap: {
          static_resources: { clusters: [{ name: 'api' }], listeners: [{ name: 'in' }, { name: 'out' }] },
        },
        options: {},
        version: '1.2.3',
        sources: ['/etc/proxy.yaml'],
      }),
    ),
  );
  assert.equal(
    boot.text,
    'bootstrap loaded from /etc/proxy.yaml (build 1.2.3): 1 static cluster, 2 static listeners',
  );
  assert.deepEqual(boot.listeners, ['in', 'out']);
});

test('an event of an unknown type or with missing fields still gets a line', () => {
  const unknown = { seq: 1, at: AT, source: 'x', event: { type: 'future/thing' } };
  assert.match(summarize(unknown).text, /^future\/thing \(an event type this build does not know\)$/);
  const broken = { seq: 1, at: AT, source: 'x', event: { type: 'endpoints/hosts-set' } };
  assert.match(summarize(broken).text, /fields are not as this build expects/);
});

test('filters by type prefix, source, cluster, listener, host and time', () => {
  const events = [
    env(activeHealthChanged({ cluster: 'api', address: '10.0.0.3:80', healthy: false }), 1, 'health_check'),
    env(hostsUpdated({ cluster: 'web', updates: [{ address: '10.0.0.3:8080', weight: 2 }] }), 2, 'eds'),
    env(runtimeModified({ values: { a: 'b' } }), 3, 'admin'),
  ].map((e, i) => ({ ...e, at: AT + i * 1000 }));
  const seqs = (filter: Partial<typeof NO_FILTER>) =>
    events.filter((e) => matchesFilter(e, { ...NO_FILTER, ...filter })).map((e) => e.seq);
  assert.deepEqual(seqs({}), [1, 2, 3]);
  assert.deepEqual(seqs({ types: ['health/'] }), [1]);
  assert.deepEqual(seqs({ types: ['health/', 'runtime/modified'] }), [1, 3]);
  assert.deepEqual(seqs({ sources: ['eds', 'admin'] }), [2, 3]);
  assert.deepEqual(seqs({ clusters: ['web'] }), [2]);
  assert.deepEqual(seqs({ hosts: ['10.0.0.3'] }), [1, 2]);
  assert.deepEqual(seqs({ hosts: ['10.0.0.3:80'] }), [1]);
  assert.deepEqual(seqs({ hosts: ['10.0.0.30'] }), []);
  assert.deepEqual(seqs({ listeners: ['in'] }), []);
  assert.deepEqual(seqs({ since: { seq: 1 } }), [2, 3]);
  assert.deepEqual(seqs({ since: { time: AT + 1000 }, until: { time: AT + 1000 } }), [2]);
  assert.deepEqual(seqs({ until: { seq: 2 }, clusters: ['api', 'web'] }), [1, 2]);
});
