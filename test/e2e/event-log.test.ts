import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { replayLog } from '../../src/control/replay.js';
import { renderReplayView } from '../../src/cli/replay-views.js';
import { HTTP_BOOTSTRAP_YAML, type SpawnedProxy, spawnProxy } from '../helpers/event-log.js';

const scratch = mkdtempSync(join(tmpdir(), 'event-log-e2e-'));
const running = new Set<SpawnedProxy>();
after(() => {
  for (const p of running) p.child.kill('SIGKILL');
  rmSync(scratch, { recursive: true, force: true });
});

async function start(name: string, extra: string[] = []) {
  const dir = mkdtempSync(join(scratch, `${name}-`));
  const config = join(dir, 'bootstrap.yaml');
  writeFileSync(config, HTTP_BOOTSTRAP_YAML);
  const log = join(dir, 'events.ndjson');
  const proxy = await spawnProxy(
    ['-c', config, '--event-log', log, '--file-flush-interval-msec', '20', ...extra],
    join(dir, 'admin-address'),
  );
  running.add(proxy);
  return { proxy, log };
}

async function get(base: string, path: string): Promise<{ status: number; body: string }> {
  const res = await fetch(base + path);
  return { status: res.status, body: await res.text() };
}

async function post(base: string, path: string): Promise<string> {
  const res = await fetch(base + path, { method: 'POST' });
  const body = await res.text();
  assert.equal(res.status, 200, `${path}: ${body}`);
  return body;
}

const VIEWS: Array<{
  view: 'runtime' | 'config_dump' | 'listeners' | 'clusters';
  path: string;
  format: 'json' | 'text';
}> = [
  { view: 'runtime', path: '/runtime', format: 'json' },
  { view: 'config_dump', path: '/config_dump', format: 'json' },
  { view: 'listeners', path: '/listeners?format=json', format: 'json' },
  { view: 'clusters', path: '/clusters?format=json', format: 'json' },
];

interface Capture {
  seq: number;
  bodies: Record<string, string>;
}

/** The live views with the sequence number they show: retried until no event slipped in between. */
async function capture(base: string): Promise<Capture> {
  for (;;) {
    const before = JSON.parse((await get(base, '/events?since=0&limit=0')).body).latest_seq as number;
    const bodies: Record<string, string> = {};
    for (const v of VIEWS) bodies[v.view] = (await get(base, v.path)).body;
    const afterSeq = JSON.parse((await get(base, '/events?since=0&limit=0')).body).latest_seq as number;
    if (before === afterSeq) return { seq: before, bodies };
  }
}

test('a recorded live run replays to the snapshots the admin showed, at every point captured', async () => {
  const { proxy, log } = await start('live');
  const base = proxy.admin;
  const captures: Capture[] = [await capture(base)];
  await post(base, '/runtime_modify?upstream.healthy_panic_threshold=25&feature.x=on');
  captures.push(await capture(base));
  await post(base, '/healthcheck/fail');
  await post(base, '/runtime_modify?feature.x=');
  captures.push(await capture(base));
  await post(base, '/healthcheck/ok');
  await post(base, '/drain_listeners?inboundonly');
  captures.push(await capture(base));

  // The live admin travels back too: ?at= renders what was shown then.
  for (const c of captures) {
    for (const v of VIEWS) {
      const sep = v.path.includes('?') ? '&' : '?';
      const past = await get(base, `${v.path}${sep}at=${c.seq}`);
      assert.equal(past.body, c.bodies[v.view], `live ${v.path} at seq ${c.seq}`);
    }
  }
  const events = JSON.parse((await get(base, '/events?since=0')).body) as {
    events: Array<{ event: { type: string } }>;
  };
  const types = events.events.map((e) => e.event.type);
  assert.ok(
    types.includes('runtime/modified') && types.includes('server/healthcheck-failed'),
    types.join(','),
  );

  await post(base, '/quitquitquit');
  assert.equal(await proxy.exited, 0);
  running.delete(proxy);

  const lines = readFileSync(log, 'utf8').split('\n');
  assert.equal(JSON.parse(lines[0]!).format, 'proxy-event-log');
  assert.equal(lines.at(-1), '', 'the log ends with a whole line');
  assert.ok(
    lines.some((l) => l.includes('server/shutdown-requested')),
    'events up to the shutdown are flushed',
  );
  for (const c of captures) {
    const replayed = await replayLog(log, { target: { seq: c.seq } });
    for (const v of VIEWS) {
      const out = renderReplayView(v.view, v.format, replayed.state, replayed.header?.options ?? null);
      assert.equal(out.body, c.bodies[v.view], `replayed ${v.view} at seq ${c.seq}`);
    }
  }
});

test('kill -9 while recording under load: the log replays up to its last complete line', async () => {
  const { proxy, log } = await start('crash');
  const base = proxy.admin;
  let sent = 0;
  const load = (async () => {
    for (;;) {
      try {
        await fetch(`${base}/runtime_modify?n=${sent}`, { method: 'POST' });
        sent += 1;
      } catch {
        return;
      }
    }
  })();
  while (sent < 300) await new Promise((r) => setTimeout(r, 10));
  proxy.child.kill('SIGKILL');
  await proxy.exited;
  running.delete(proxy);
  await load;
  const result = await replayLog(log);
  assert.deepEqual(result.badLines, []);
  assert.ok(result.lastSeq > 100, `replayed up to seq ${result.lastSeq}`);
  // The last recorded modification is the value the replay ends with.
  const text = readFileSync(log, 'utf8');
  const complete = text.slice(0, text.lastIndexOf('\n'));
  const last = complete.split('\n').findLast((l) => l.includes('runtime/modified'))!;
  const value = (JSON.parse(last) as { event: { values: { n: string } } }).event.values.n;
  assert.equal(result.state.runtime.layers.at(-1)!.values.n, value);
});

test('bad time-travel parameters answer 400 with a usage line, forgotten ones 410', async () => {
  const { proxy } = await start('params');
  const base = proxy.admin;
  const bad = await get(base, '/events?since=abc');
  assert.equal(bad.status, 400);
  assert.match(bad.body, /usage: \/events/);
  const future = await get(base, '/snapshots/diff?from=1&to=999999');
  assert.equal(future.status, 400);
  assert.match(future.body, /has not happened yet/);
  const noPath = await get(base, '/snapshots/blame?path=clusters');
  assert.equal(noPath.status, 400);
  const absent = await get(base, '/snapshots/blame?path=/clusters/nope/hosts');
  assert.equal(absent.status, 404);
  await post(base, '/runtime_modify?blamed=1');
  await post(base, '/runtime_modify?other=1');
  const blame = JSON.parse(
    (await get(base, '/snapshots/blame?path=/runtime/layers/admin/values/blamed')).body,
  );
  assert.equal(blame.value, '1');
  assert.deepEqual(blame.changed_by.event, { type: 'runtime/modified', values: { blamed: '1' } });
  // Dry run: the patch, and nothing dispatched.
  const seq = JSON.parse((await get(base, '/events?limit=0')).body).latest_seq;
  const dry = await fetch(`${base}/runtime_modify?k=v&dry_run=1`, { method: 'POST' });
  assert.deepEqual(JSON.parse(await dry.text()), [
    { op: 'add', path: '/runtime/layers/admin/values/k', value: 'v' },
  ]);
  assert.equal(JSON.parse((await get(base, '/events?limit=0')).body).latest_seq, seq);
  // follow streams new events as server-sent events.
  const controller = new AbortController();
  const res = await fetch(`${base}/events?since=${seq}&follow=1`, { signal: controller.signal });
  assert.equal(res.headers.get('content-type'), 'text/event-stream');
  const reader = res.body!.getReader();
  await post(base, '/runtime_modify?streamed=1');
  let received = '';
  while (!received.includes('\n\n')) received += new TextDecoder().decode((await reader.read()).value);
  assert.match(received, new RegExp(`^id: ${seq + 1}\\ndata: .*"streamed":"1"`));
  controller.abort();
  await post(base, '/quitquitquit');
  assert.equal(await proxy.exited, 0);
  running.delete(proxy);
});
