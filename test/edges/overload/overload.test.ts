import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import * as http from 'node:http';
import type * as net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { constants, PerformanceObserver } from 'node:perf_hooks';
import { test } from 'node:test';
import { Report } from '../../../src/bootstrap/report.js';
import { compileOverloadManager } from '../../../src/config/overload.js';
import { startOverloadManager } from '../../../src/edges/overload/monitor.js';
import { startShrinkHeap } from '../../../src/edges/overload/shrink-heap.js';
import { load } from '../../helpers/bootstrap.js';
import { hcmWithRoutes, httpBootstrap } from '../../helpers/bootstraps.js';
import { cleanupsAfterAll } from '../../helpers/cleanups.js';
import { cluster, loadedContext, until } from '../../helpers/dataplane.js';
import { startProxyProcess } from '../../helpers/proxy-process.js';

// overload_manager was refused (the edge best-practice bootstrap sets it). An injected
// resource (a file holding the pressure) drives the actions here, with two workers: the
// primary reads the monitors, and each worker acts on the action events it folds.

const cleanups = cleanupsAfterAll();

const INJECTED = 'envoy.resource_monitors.injected_resource';

function compile(raw: Record<string, unknown>): Report {
  const report = new Report('t');
  compileOverloadManager(raw as never, 'overload_manager', report);
  return report;
}

test('compile: monitors and triggers checked as the reference checks them, unknown ones refused', () => {
  const monitor = { name: INJECTED, config: { filename: '/tmp/x' } };
  const trigger = (name: string, value: number) => ({ name, threshold: { value } });
  const ok = compile({
    refresh_interval: '0.25s',
    resource_monitors: [
      monitor,
      { name: 'proxy.resource_monitors.fixed_heap', config: { max_heap_size_bytes: 1e9 } },
    ],
    actions: [{ name: 'envoy.overload_actions.stop_accepting_requests', triggers: [trigger(INJECTED, 0.9)] }],
  });
  assert.deepEqual(ok.problems, []);
  const bad = compile({
    resource_monitors: [monitor, monitor, { name: 'envoy.resource_monitors.disk' }],
    actions: [
      { name: 'envoy.overload_actions.disable_http_keepalive', triggers: [trigger('nope', 0.5)] },
      { name: 'envoy.overload_actions.shrink_heap', triggers: [trigger(INJECTED, 1.5)] },
      { name: 'envoy.overload_actions.sing', triggers: [] },
    ],
  });
  assert.deepEqual(
    bad.problems.map((p) => p.path),
    [
      'overload_manager.resource_monitors[1].name',
      'overload_manager.resource_monitors[2].name',
      'overload_manager.actions[0].triggers[0].name',
      'overload_manager.actions[1].triggers[0].threshold.value',
      'overload_manager.actions[2].name',
      'overload_manager.actions[2].triggers',
    ],
  );
});

test('global_downstream_max_connections: a positive limit, and no trigger on it (it has no pressure here)', () => {
  const monitor = (max: number) => ({
    name: 'envoy.resource_monitors.global_downstream_max_connections',
    typed_config: { max_active_downstream_connections: max },
  });
  const ok = new Report('t');
  const spec = compileOverloadManager({ resource_monitors: [monitor(50000)] }, 'overload_manager', ok);
  assert.deepEqual(ok.errors, []);
  assert.deepEqual(spec.monitors, [
    {
      name: 'envoy.resource_monitors.global_downstream_max_connections',
      kind: 'global_downstream_max_connections',
      maxConnections: 50000,
    },
  ]);
  const bad = new Report('t');
  compileOverloadManager(
    {
      resource_monitors: [monitor(0)],
      actions: [],
    },
    'overload_manager',
    bad,
  );
  assert.match(
    bad.errors.join('\n'),
    /max_active_downstream_connections: must be a positive number of connections/,
  );
  const trigger = new Report('t');
  compileOverloadManager(
    {
      resource_monitors: [monitor(5)],
      actions: [
        {
          name: 'envoy.overload_actions.stop_accepting_requests',
          triggers: [
            { name: 'envoy.resource_monitors.global_downstream_max_connections', threshold: { value: 0.9 } },
          ],
        },
      ],
    },
    'overload_manager',
    trigger,
  );
  assert.match(
    trigger.errors.join('\n'),
    /actions\[0\]\.triggers\[0\]\.name: a trigger on .* is not implemented/,
  );
});

test('the monitors given by their v2alpha and v3 type URLs load (regression)', () => {
  // Root cause: the loader had no message for the monitors' typed configs, so a bootstrap
  // naming a monitor by its `@type` (as the reference's google_com_proxy example does) was
  // refused as an unknown type URL although the monitor is implemented.
  const spellings: Array<[string, string]> = [
    [
      'envoy.config.resource_monitor.fixed_heap.v2alpha.FixedHeapConfig',
      'envoy.config.resource_monitor.injected_resource.v2alpha.InjectedResourceConfig',
    ],
    [
      'envoy.extensions.resource_monitors.fixed_heap.v3.FixedHeapConfig',
      'envoy.extensions.resource_monitors.injected_resource.v3.InjectedResourceConfig',
    ],
  ];
  for (const [heap, injected] of spellings) {
    const result = load({
      configYaml: JSON.stringify({
        overload_manager: {
          refresh_interval: '0.25s',
          resource_monitors: [
            {
              name: 'envoy.resource_monitors.fixed_heap',
              typed_config: { '@type': `type.googleapis.com/${heap}`, max_heap_size_bytes: 2147483648 },
            },
            {
              name: INJECTED,
              typed_config: { '@type': `type.googleapis.com/${injected}`, filename: '/tmp/pressure' },
            },
          ],
          actions: [
            {
              name: 'envoy.overload_actions.shrink_heap',
              triggers: [{ name: 'envoy.resource_monitors.fixed_heap', threshold: { value: 0.95 } }],
            },
          ],
        },
      }),
    });
    assert.deepEqual(result.ok ? [] : result.errors, [], heap);
  }
  const bad = load({
    configYaml: JSON.stringify({
      overload_manager: {
        resource_monitors: [
          {
            name: 'envoy.resource_monitors.fixed_heap',
            typed_config: {
              '@type': 'type.googleapis.com/envoy.config.resource_monitor.fixed_heap.v2alpha.FixedHeapConfig',
              max_heap_size_bytes: 0,
            },
          },
        ],
      },
    }),
  });
  assert.ok(
    !bad.ok && bad.errors.some((e) => e.includes('resource_monitors[0].typed_config.max_heap_size_bytes')),
  );
});

test('fixed_heap: heap in use over max_heap_size_bytes, in percent; over its threshold the action is in the store', async () => {
  const heap = 'envoy.resource_monitors.fixed_heap';
  const action = 'envoy.overload_actions.stop_accepting_requests';
  const ctx = loadedContext({
    static_resources: {},
    overload_manager: {
      refresh_interval: '0.02s',
      // Any live heap is more than a kilobyte, so pressure 1; a terabyte, next to nothing.
      resource_monitors: [
        { name: heap, config: { max_heap_size_bytes: 1024 } },
        { name: 'proxy.resource_monitors.fixed_heap', config: { max_heap_size_bytes: 2 ** 40 } },
      ],
      actions: [{ name: action, triggers: [{ name: heap, threshold: { value: 0.95 } }] }],
    },
  });
  const stop = startOverloadManager(ctx);
  assert.ok(stop);
  try {
    const gauge = (name: string) => ctx.stats.gauges.get(name)?.value ?? -1;
    await until(() => ctx.store.state.server.overload?.stop_accepting_requests === true, 2000, 'action on');
    assert.equal(gauge(`overload.${heap}.pressure`), 100);
    assert.equal(gauge('overload.proxy.resource_monitors.fixed_heap.pressure'), 0);
    assert.equal(gauge(`overload.${action}.active`), 1);
  } finally {
    stop();
    await ctx.close();
  }
});

test('shrink_heap: while active, V8 collects (a forced GC) every refresh, and stops when it ends', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'overload-'));
  const pressureFile = join(dir, 'pressure');
  writeFileSync(pressureFile, '0');
  const ctx = loadedContext({
    static_resources: {},
    overload_manager: {
      refresh_interval: '0.05s',
      resource_monitors: [{ name: INJECTED, config: { filename: pressureFile } }],
      actions: [
        {
          name: 'envoy.overload_actions.shrink_heap',
          triggers: [{ name: INJECTED, threshold: { value: 0.5 } }],
        },
      ],
    },
  });
  let forced = 0;
  const observer = new PerformanceObserver((list) => {
    for (const e of list.getEntries()) {
      const flags = (e as { detail?: { flags?: number } }).detail?.flags ?? 0;
      if (flags & constants.NODE_PERFORMANCE_GC_FLAGS_FORCED) forced += 1;
    }
  });
  observer.observe({ entryTypes: ['gc'] });
  const stops = [startOverloadManager(ctx), startShrinkHeap(ctx)];
  try {
    await new Promise((r) => setTimeout(r, 200));
    assert.equal(forced, 0, 'no collection forced while the action is off');
    writeFileSync(pressureFile, '0.8');
    await until(() => forced >= 3, 3000, 'forced collections');
    writeFileSync(pressureFile, '0');
    await until(() => ctx.store.state.server.overload === undefined, 2000, 'action off');
    await new Promise((r) => setTimeout(r, 100));
    const after = forced;
    await new Promise((r) => setTimeout(r, 300));
    assert.ok(forced - after <= 1, `collections stop with the action (${forced - after} more)`);
  } finally {
    for (const stop of stops) stop?.();
    observer.disconnect();
    await ctx.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

/** One request on its own connection (so successive ones reach either worker). */
function get(port: number): Promise<{ status: number; body: string; connection: string | undefined }> {
  return new Promise((resolve, reject) => {
    // Asking for keep-alive, to see whether the proxy grants it; the socket is dropped after.
    const headers = { connection: 'keep-alive' };
    const req = http.get(
      { port, host: '127.0.0.1', path: '/', agent: false, headers, timeout: 3000 },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (body += c));
        res.on('end', () => {
          req.destroy();
          resolve({ status: res.statusCode ?? 0, body, connection: res.headers.connection });
        });
      },
    );
    req.on('timeout', () => req.destroy(new Error('no answer within 3 s')));
    req.on('error', reject);
  });
}

async function eventually(check: () => Promise<boolean>, what: string, ms = 5000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

test('--concurrency 2: stop_accepting_requests answers 503 without the upstream, disable_http_keepalive closes, stop_accepting_connections holds, all recover', async () => {
  let upstreamRequests = 0;
  const upstream = http.createServer((_req, res) => {
    upstreamRequests += 1;
    res.end('ok');
  });
  await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
  cleanups.push(() => {
    upstream.closeAllConnections();
    upstream.close();
  });
  const dir = mkdtempSync(join(tmpdir(), 'overload-'));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  const pressureFile = join(dir, 'pressure');
  writeFileSync(pressureFile, '0');
  const stop = 'envoy.overload_actions.stop_accepting_requests';
  const keepalive = 'envoy.overload_actions.disable_http_keepalive';
  const connections = 'envoy.overload_actions.stop_accepting_connections';
  const bootstrap = {
    ...httpBootstrap(
      [cluster('web', [(upstream.address() as net.AddressInfo).port])],
      hcmWithRoutes([{ match: { prefix: '/' }, route: { cluster: 'web' } }]),
    ),
    overload_manager: {
      refresh_interval: '0.05s',
      resource_monitors: [{ name: INJECTED, config: { filename: pressureFile } }],
      actions: [
        { name: stop, triggers: [{ name: INJECTED, threshold: { value: 0.9 } }] },
        { name: keepalive, triggers: [{ name: INJECTED, threshold: { value: 0.5 } }] },
        { name: connections, triggers: [{ name: INJECTED, threshold: { value: 0.99 } }] },
      ],
    },
  };
  const proxy = await startProxyProcess(bootstrap, ['--concurrency', '2']);
  cleanups.push(proxy.stop);
  const port = await proxy.listenerPort('http');
  const stat = async (name: string) => {
    const res = await proxy.get(`/stats?filter=^${name.replaceAll('.', '\\.')}$`);
    const value = /: (\d+)/.exec(res.body)?.[1];
    return value === undefined ? -1 : Number(value);
  };

  const calm = await get(port);
  // HTTP/1.1 keeps the connection without saying so: no `connection: close`.
  assert.deepEqual([calm.status, calm.body, calm.connection], [200, 'ok', undefined]);
  assert.equal(upstreamRequests, 1);
  assert.equal(await stat(`overload.${INJECTED}.pressure`), 0);

  writeFileSync(pressureFile, '0.6');
  await eventually(async () => (await get(port)).connection === 'close', 'keep-alive disabled');
  for (let i = 0; i < 4; i++) assert.equal((await get(port)).connection, 'close');
  assert.equal(await stat(`overload.${keepalive}.active`), 1);
  assert.equal(await stat(`overload.${stop}.active`), 0);
  assert.equal(await stat(`overload.${INJECTED}.pressure`), 60);

  writeFileSync(pressureFile, '0.95');
  await eventually(async () => (await get(port)).status === 503, 'requests refused');
  const before = upstreamRequests;
  for (let i = 0; i < 6; i++) {
    const res = await get(port);
    assert.deepEqual([res.status, res.body], [503, 'proxy overloaded']);
  }
  assert.equal(upstreamRequests, before, 'no refused request reached the upstream');
  assert.equal(await stat(`overload.${stop}.active`), 1);
  // Both workers refused some (each of the new connections went to either), summed here.
  assert.ok((await stat('http.ingress_http.downstream_rq_overload_close')) >= 7);

  // An unreadable value is a failed update: the actions stay as they were.
  writeFileSync(pressureFile, 'lots');
  await eventually(async () => (await stat(`overload.${INJECTED}.failed_updates`)) > 0, 'a failed update');
  assert.equal((await get(port)).status, 503);

  // At 0.99 new connections are held unread, as in a listen backlog, until the action ends.
  const cxBefore = await stat('listener.127.0.0.1_0.downstream_cx_total');
  writeFileSync(pressureFile, '0.99');
  await eventually(async () => (await stat(`overload.${connections}.active`)) === 1, 'accepting stopped');
  await new Promise((r) => setTimeout(r, 100));
  let heldAnswered = false;
  const held = get(port).then((res) => {
    heldAnswered = true;
    return res;
  });
  await new Promise((r) => setTimeout(r, 300));
  assert.equal(heldAnswered, false, 'a new connection is not served while accepting is stopped');

  writeFileSync(pressureFile, '0.1');
  // Both actions end at the same refresh: the held request is served, not refused.
  assert.deepEqual([(await held).status, (await held).body], [200, 'ok']);
  assert.ok((await stat('listener.127.0.0.1_0.downstream_cx_total')) > cxBefore);
  await eventually(async () => (await get(port)).status === 200, 'requests served again');
  for (let i = 0; i < 4; i++) {
    const res = await get(port);
    assert.deepEqual([res.status, res.connection], [200, undefined]);
  }
  assert.equal(await stat(`overload.${stop}.active`), 0);
  assert.equal(await stat(`overload.${keepalive}.active`), 0);
  assert.equal(await stat(`overload.${connections}.active`), 0);
  // Each change was one event: on, then off, for each action.
  const events = await proxy.get('/events?type=server/overload');
  assert.equal(events.status, 200);
  assert.equal(events.body.match(/server\/overload-action-changed/g)?.length, 6);
});

test("bypass_overload_manager (Istio's and Envoy Gateway's stats listeners): no action applies to that listener while another is refused", async () => {
  const dir = mkdtempSync(join(tmpdir(), 'overload-'));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  const pressureFile = join(dir, 'pressure');
  writeFileSync(pressureFile, '0');
  const actions = ['stop_accepting_requests', 'disable_http_keepalive', 'stop_accepting_connections'];
  const base = httpBootstrap(
    [],
    hcmWithRoutes([
      { match: { prefix: '/' }, direct_response: { status: 200, body: { inline_string: 'ok' } } },
    ]),
  );
  const listeners = (base.static_resources as { listeners: Record<string, unknown>[] }).listeners;
  listeners.push({ ...listeners[0], name: 'stats', bypass_overload_manager: true });
  const proxy = await startProxyProcess(
    {
      ...base,
      overload_manager: {
        refresh_interval: '0.05s',
        resource_monitors: [{ name: INJECTED, config: { filename: pressureFile } }],
        actions: actions.map((a) => ({
          name: `envoy.overload_actions.${a}`,
          triggers: [{ name: INJECTED, threshold: { value: 0.9 } }],
        })),
      },
    },
    ['--concurrency', '1'],
  );
  cleanups.push(proxy.stop);
  const refusing = await proxy.listenerPort('http');
  const stats = await proxy.listenerPort('stats');
  writeFileSync(pressureFile, '0.95');
  await eventually(
    async () => (await proxy.get('/stats?filter=stop_accepting_connections.active$')).body.includes(': 1'),
    'every action active',
  );
  let refusedAnswered = false;
  const held = get(refusing).then((res) => {
    refusedAnswered = true;
    return res;
  });
  for (let i = 0; i < 3; i++) {
    const res = await get(stats);
    assert.deepEqual([res.status, res.body, res.connection], [200, 'ok', undefined]);
  }
  assert.equal(refusedAnswered, false, 'the other listener holds its new connection');
  writeFileSync(pressureFile, '0');
  assert.equal((await held).status, 200);
});
