import assert from 'node:assert/strict';
import { it } from 'node:test';
import {
  activeHealthChanged,
  bootstrapLoaded,
  type Envelope,
  healthCheckFailed,
  hotRestarted,
  hotRestartParent,
  listenerBound,
  type ProxyEvent,
  serverStateChanged,
} from '../../../events/index.js';
import { foldAll, initialState } from '../../../reducers/index.js';
import { renderHome } from '../../../views/home/render.js';
import { homeSummary } from '../../../views/home/summary.js';
import { cluster } from '../../helpers/event-log.js';

const envs = (events: ProxyEvent[]): Envelope<ProxyEvent>[] =>
  events.map((event, i) => ({ seq: i + 1, at: 1000 + i, source: 'test', event }));

const HOSTILE = `<script>alert('x')</script>&"`;

function listener(name: string, port: number) {
  return {
    name,
    address: { socket_address: { address: '127.0.0.1', port_value: port } },
    filter_chains: [{ filters: [{ name: 'envoy.tcp_proxy', config: { stat_prefix: 's', cluster: 'api' } }] }],
  };
}

const bootstrap = {
  static_resources: {
    clusters: [cluster('api', ['10.0.0.1:80', '10.0.0.2:80']), cluster(HOSTILE, ['10.0.0.9:80'])],
    listeners: [listener('ingress', 0), listener(HOSTILE, 10001)],
  },
};

const live = foldAll(
  initialState,
  envs([
    bootstrapLoaded({ bootstrap, options: {}, version: 'abc/1.2.3/Clean/RELEASE/BoringSSL', sources: [] }),
    hotRestarted({ epoch: 2, parentEpoch: 1, firstStartedAt: 0 }),
    hotRestartParent({ epoch: 1, step: 'draining', connections: 4 }),
    listenerBound({ name: 'ingress', address: '127.0.0.1', port: 41000 }),
    activeHealthChanged({ cluster: 'api', address: '10.0.0.2:80', healthy: false }),
    serverStateChanged({ state: 'LIVE' }),
  ]),
);

const endpoints = [
  { path: '/', help: 'Admin home page', mutates: false, params: [] },
  { path: '/ready', help: 'print server state', mutates: false, params: [] },
  { path: '/healthcheck/fail', help: 'fail', mutates: true, params: [] },
];

it('summarises state, version, uptime, epoch, listeners and healthy hosts from the snapshot', () => {
  const s = homeSummary(live, 1000 + 7_325_000);
  assert.equal(s.state, 'LIVE');
  assert.equal(s.version, 'abc/1.2.3/Clean/RELEASE/BoringSSL');
  assert.equal(s.uptimeMs, 7_325_000);
  assert.equal(s.epoch, 2);
  assert.deepEqual(s.parent, { epoch: 1, step: 'draining', connections: 4 });
  assert.deepEqual(
    s.listeners.map((l) => [l.name, l.address, l.state]),
    [
      [HOSTILE, '127.0.0.1:10001', 'pending'],
      ['ingress', '127.0.0.1:41000', 'active'],
    ],
  );
  assert.deepEqual([s.clusters, s.hosts, s.healthyHosts], [2, 3, 2]);
  assert.equal(s.seq, 6);
});

it('reads DRAINING while the server fails its health checks, as /ready does', () => {
  const failing = foldAll(live, [{ seq: 7, at: 2000, source: 'admin', event: healthCheckFailed({}) }]);
  assert.equal(homeSummary(failing, 2000).state, 'DRAINING');
});

it('opens with the state, version, uptime, epoch, listeners and the timeline link, endpoints below', () => {
  const body = String(renderHome(endpoints, homeSummary(live, 1000 + 7_325_000)).body);
  assert.match(body, /<span id='server-state' style='background:#2e7d32'>LIVE<\/span>/);
  assert.match(body, /<td id='version'>abc\/1\.2\.3\/Clean\/RELEASE\/BoringSSL<\/td>/);
  assert.match(body, /<td id='uptime'>2h 2m<\/td>/);
  assert.match(body, /<td id='epoch'>2 <span class='meta'>\(epoch 1: draining, 4 connections left\)<\/span>/);
  assert.match(
    body,
    /<span id='healthy-hosts'>2 of 3 hosts healthy<\/span> <span class='bad'>\(1 not\)<\/span>/,
  );
  assert.match(body, /<a id='timeline' href='events\?format=html'>event timeline<\/a>/);
  assert.match(body, /<td class='home-data address'>127\.0\.0\.1:41000<\/td>/);
  // The endpoint list follows the state, and `/` does not list itself.
  assert.ok(body.indexOf("id='status'") < body.indexOf("class='home-row'"));
  assert.match(body, /<form action='healthcheck\/fail' method='post'>/);
  assert.doesNotMatch(body, /href=''/);
});

it('escapes a hostile listener name (config text) wherever it is shown', () => {
  const body = String(renderHome(endpoints, homeSummary(live, 2000)).body);
  assert.doesNotMatch(body, /<script>alert/);
  assert.match(body, /&lt;script&gt;alert\(&#39;x&#39;\)&lt;\/script&gt;&amp;&quot;/);
});

it('shows a read-only admin and its mutations as buttons that cannot be pressed', () => {
  const body = String(renderHome(endpoints, homeSummary(live, 2000), { readOnly: true }).body);
  assert.match(body, /<span id='read-only' class='meta'>admin read-only<\/span>/);
  assert.doesNotMatch(body, /method='post'/);
  assert.match(body, /<button disabled title='refused: --admin-read-only'>healthcheck\/fail<\/button>/);
  // Reads stay links.
  assert.match(body, /<a href='ready'>ready<\/a>/);
});
