import assert from 'node:assert/strict';
import { it } from 'node:test';
import { Script } from 'node:vm';
import fc from 'fast-check';
import {
  activeHealthChanged,
  bootstrapLoaded,
  type Envelope,
  outlierChanged,
  type ProxyEvent,
} from '../../../events/index.js';
import { foldAll, initialState, type State } from '../../../reducers/index.js';
import { type ClustersFigures, zeroHostCounters } from '../../../views/clusters/figures.js';
import { type ClustersHtmlOptions, renderClustersHtml } from '../../../views/clusters/html.js';
import { bootstrapWith, cluster } from '../../helpers/event-log.js';

const envs = (events: ProxyEvent[]): Envelope<ProxyEvent>[] =>
  events.map((event, i) => ({ seq: i + 1, at: 1000 + i, source: 'test', event }));

/** Every tag the page writes itself. */
const TAGS = new Set(
  '!DOCTYPE html head meta title style body h1 h2 p a div span form button label input section table thead tbody tr th td svg rect time br script'.split(
    ' ',
  ),
);

/** The page's HTML for `of`, with no live figures unless given and nothing reloading. */
function page(
  of: State,
  options: Partial<ClustersHtmlOptions> = {},
  figures: ClustersFigures = { hostStats: () => undefined },
): string {
  return String(
    renderClustersHtml(of, figures, { actions: [], now: 0, refreshS: 0, at: null, ...options }).body,
  );
}

const state = foldAll(
  initialState,
  envs([
    bootstrapLoaded({
      bootstrap: bootstrapWith([cluster('api', ['10.0.0.1:80', '10.0.0.2:80', '10.0.0.3:80'])]),
      options: {},
      version: 't',
      sources: [],
    }),
    activeHealthChanged({ cluster: 'api', address: '10.0.0.2:80', healthy: false }),
    outlierChanged({ cluster: 'api', address: '10.0.0.3:80', ejected: true, reason: 'consecutive_5xx' }),
  ]),
);

it('colours each host row by its state and shows success rates and the totals the page rates', () => {
  const figures = {
    hostStats: (_c: string, address: string) =>
      address === '10.0.0.1:80'
        ? { ...zeroHostCounters(), rq_total: 50, rq_success: 9, rq_error: 1 }
        : undefined,
  };
  const body = page(state, { now: 12_000, refreshS: 5 }, figures);
  const row = (address: string) =>
    new RegExp(`<tr class='host ([a-z]+)' data-address='${address}'>(.*?)</tr>`).exec(body);
  assert.equal(row('10.0.0.1:80')?.[1], 'healthy');
  assert.equal(row('10.0.0.2:80')?.[1], 'failed');
  assert.equal(row('10.0.0.3:80')?.[1], 'ejected');
  assert.match(row('10.0.0.2:80')?.[2] ?? '', /failed health check/);
  assert.match(row('10.0.0.3:80')?.[2] ?? '', /ejected \(outlier\)/);
  // 9 of 10 requests succeeded; the rate cell carries the total for the page's script.
  assert.match(
    row('10.0.0.1:80')?.[2] ?? '',
    /90\.0%<\/td><td class='num rate' data-host='api\/10\.0\.0\.1:80' data-total='50'>—<\/td>/,
  );
  assert.match(row('10.0.0.2:80')?.[2] ?? '', /<td class='num success'>—<\/td>/);
  assert.match(body, /3 hosts: 1 healthy, 1 failed, 1 ejected/);
  assert.match(body, /<meta http-equiv='refresh' content='5'>/);
  assert.match(body, /<body data-now='12000'>/);
});

it('names a past snapshot and can stay still', () => {
  const body = page(state, { at: 2 });
  assert.match(body, /as of the snapshot after event 2/);
  assert.doesNotMatch(body, /http-equiv='refresh'/);
});

const table = [
  { path: '/clusters', help: 'upstream cluster status', mutates: false, params: [] },
  { path: '/healthcheck/fail', help: 'cause the server to fail health checks', mutates: true, params: [] },
  { path: '/healthcheck/ok', help: 'cause the server to pass health checks', mutates: true, params: [] },
  {
    path: '/drain_listeners',
    help: 'drain listeners',
    mutates: true,
    params: [{ name: 'graceful', help: 'graceful drain first', kind: 'flag' }],
  },
  { path: '/quitquitquit', help: 'exit the server', mutates: true, params: [] },
];

it('shows the last check, when the verdict changed and the ejection of each host', () => {
  const figures = {
    hostStats: () => undefined,
    lastHealthCheck: (_c: string, address: string) =>
      address === '10.0.0.2:80'
        ? { at: 9_000, result: 'network' as const }
        : { at: 11_500, result: 'success' as const },
  };
  const body = page(state, { now: 12_000 }, figures);
  const cell = (address: string, cls: string) =>
    new RegExp(`data-address='${address}'>.*?<td class='${cls}'>(.*?)</td>`).exec(body)?.[1];
  // Host 2 failed its check at seq 2 (at 1001).
  assert.equal(
    cell('10.0.0.2:80', 'check'),
    "<span class='bad'>no answer</span> <time datetime='1970-01-01T00:00:09.000Z' title='1970-01-01T00:00:09.000Z'>3s ago</time>" +
      "<br><span class='meta'>failing since <time datetime='1970-01-01T00:00:01.001Z' title='1970-01-01T00:00:01.001Z'>10s ago</time></span>",
  );
  assert.match(
    cell('10.0.0.1:80', 'check') ?? '',
    /^<span class='ok'>passed<\/span> <time [^>]*>0s ago<\/time>$/,
  );
  // Host 3 was ejected at seq 3 (at 1002) for consecutive 5xx.
  assert.match(
    cell('10.0.0.3:80', 'ejection') ?? '',
    /^<span class='bad'>ejected<\/span> <time [^>]*>10s ago<\/time> <span class='meta'>\(consecutive 5xx\)<\/span>$/,
  );
  assert.equal(cell('10.0.0.1:80', 'ejection'), '—');
  const back = foldAll(state, [
    {
      seq: 4,
      at: 4002,
      source: 'test',
      event: outlierChanged({
        cluster: 'api',
        address: '10.0.0.3:80',
        ejected: false,
        reason: 'ejection time elapsed',
      }),
    },
  ]);
  const later = page(back, { now: 12_000 }, figures);
  assert.match(
    later,
    /<td class='ejection'>last ejected <time [^>]*>10s ago<\/time> for 3s <span class='meta'>\(consecutive 5xx\)<\/span><\/td>/,
  );
});

it('shows the server state and POST buttons for the usual mutations of the table, and none without actions', () => {
  const body = page(state, { actions: table });
  assert.match(body, /server <span id='server-state' class='state-INITIALIZING'>INITIALIZING<\/span>/);
  const forms = [...body.matchAll(/<form action='([^']+)' method='post'([^>]*)>/g)].map((m) => [m[1], m[2]]);
  assert.deepEqual(forms, [
    ['healthcheck/fail', " title='cause the server to fail health checks'"],
    ['healthcheck/ok', " title='cause the server to pass health checks'"],
    ['drain_listeners', " title='drain listeners' data-confirm='drain listeners?'"],
  ]);
  // Its parameters come with it, and nothing is a GET link to a mutation.
  assert.match(body, /<input type='checkbox' name='graceful' value=''>/);
  assert.doesNotMatch(body, /href='(healthcheck|drain_listeners|quitquitquit)/);
  const bare = page(state);
  assert.doesNotMatch(bare, /<form/);
  assert.doesNotMatch(bare, /id='actions'/);
});

it('escapes a hostile cluster name, hostname and ejection reason', () => {
  const evil = `"><img src=x onerror=alert(1)>'<script>`;
  const hostile = foldAll(
    initialState,
    envs([
      bootstrapLoaded({
        bootstrap: bootstrapWith([
          {
            name: evil,
            load_assignment: {
              cluster_name: evil,
              endpoints: [
                {
                  lb_endpoints: [
                    {
                      endpoint: {
                        hostname: '<b>host</b>',
                        address: { socket_address: { address: '10.0.0.1', port_value: 80 } },
                      },
                    },
                  ],
                },
              ],
            },
          },
        ]),
        options: {},
        version: '<v>',
        sources: [],
      }),
      outlierChanged({ cluster: evil, address: '10.0.0.1:80', ejected: true, reason: '<script>x</script>' }),
    ]),
  );
  const body = page(hostile, { actions: table, now: 5000 });
  assert.doesNotMatch(body, /<img|<script>x|<b>host|<script>'|<v>/);
  assert.match(body, /id='cluster-&quot;&gt;&lt;img src=x onerror=alert\(1\)&gt;&#39;&lt;script&gt;'/);
  assert.match(body, /&lt;b&gt;host&lt;\/b&gt;/);
  assert.match(body, /\(&lt;script&gt;x&lt;\/script&gt;\)/);
  // The only scripts are the page's own.
  assert.equal(body.match(/<script>/g)?.length, 1);
});

it('carries its script inline, and the script parses', () => {
  const body = page(state, { actions: table });
  assert.doesNotMatch(body, /<script src|<link |(src|href|url)[=(]["']?https?:/);
  const script = /<script>([\s\S]*)<\/script>/.exec(body)?.[1] ?? '';
  assert.match(script, /addEventListener\('submit'/);
  assert.doesNotThrow(() => new Script(script));
});

it('no cluster name or ejection reason opens markup, whatever its characters (property)', () => {
  fc.assert(
    fc.property(
      fc.oneof(
        fc.string({ unit: 'binary', maxLength: 40 }),
        fc.string({ unit: fc.constantFrom('<', '>', '&', '"', "'", 'q', '/', ' ', '='), maxLength: 12 }),
      ),
      fc.string({ maxLength: 20 }),
      (name, reason) => {
        const s = foldAll(
          initialState,
          envs([
            bootstrapLoaded({
              bootstrap: bootstrapWith([{ ...cluster('x', ['10.0.0.1:80']), name }]),
              options: {},
              version: 't',
              sources: [],
            }),
            outlierChanged({ cluster: name, address: '10.0.0.1:80', ejected: true, reason: `${reason}<i>` }),
          ]),
        );
        const body = page(s, { actions: table });
        // The page's own tags only: every `<` the values brought is escaped.
        const tags = new Set([...body.matchAll(/<\/?([a-zA-Z0-9!]+)/g)].map((m) => m[1]));
        for (const tag of tags)
          assert.ok(TAGS.has(tag as string), `unexpected tag <${tag}> for name ${JSON.stringify(name)}`);
        assert.match(body, /\(.*&lt;i&gt;\)/);
      },
    ),
    { seed: 31, numRuns: Number(process.env.FUZZ_RUNS ?? 200) },
  );
});
