import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { runtimeModified } from '../../events/index.js';
import { checkpointLine } from '../../src/control/log-format.js';
import { ReplayError, replayLog } from '../../src/control/replay.js';
import { renderReplayView } from '../../src/cli/replay-views.js';
import { repoRoot } from '../helpers/event-log.js';
import { goldenText, SCENARIOS, scenarioLog } from '../helpers/event-log-scenarios.js';

const scratch = mkdtempSync(join(tmpdir(), 'replay-test-'));
after(() => rmSync(scratch, { recursive: true, force: true }));

const fixtureDirs = readdirSync(join(repoRoot, 'fixtures'))
  .map((name) => join(repoRoot, 'fixtures', name))
  .filter((dir) => existsSync(join(dir, 'events.ndjson')));

test('there are event-log fixtures to replay', () => {
  assert.ok(fixtureDirs.length >= 4, `found ${fixtureDirs.length}`);
});

for (const dir of fixtureDirs) {
  const name = dir.split('/').at(-1);
  test(`fixture ${name} replays byte for byte to its golden snapshot, every time`, async () => {
    const log = join(dir, 'events.ndjson');
    const first = await replayLog(log, { skipBadLines: false });
    const second = await replayLog(log);
    assert.equal(goldenText(first.state), goldenText(second.state));
    assert.equal(goldenText(first.state), readFileSync(join(dir, 'snapshot.golden.json'), 'utf8'));
    for (const view of ['clusters', 'config_dump', 'runtime', 'listeners', 'server_info'] as const) {
      const a = renderReplayView(view, 'json', first.state, first.header?.options ?? null);
      const b = renderReplayView(view, 'json', second.state, second.header?.options ?? null);
      assert.equal(a.body, b.body, `${view} renders identically`);
    }
    // Mid-log snapshots are deterministic too.
    const mid = Math.max(1, Math.floor(first.lastSeq / 2));
    const m1 = await replayLog(log, { target: { seq: mid } });
    const m2 = await replayLog(log, { target: { seq: mid } });
    assert.equal(goldenText(m1.state), goldenText(m2.state));
  });
}

test('the synthetic fixtures are what their generator writes (regenerate them when this fails)', () => {
  for (const [name, steps] of Object.entries(SCENARIOS)) {
    const file = readFileSync(join(repoRoot, 'fixtures', name, 'events.ndjson'), 'utf8');
    assert.equal(file, scenarioLog(steps), name);
  }
});

test('the merge window replays as it ran: a held flap appears only when its window closes', async () => {
  const log = join(repoRoot, 'fixtures', 'health-flaps', 'events.ndjson');
  const t0 = Date.UTC(2026, 10, 21, 14, 0, 0);
  const flags = async (ms: number) =>
    (await replayLog(log, { target: { time: t0 + ms } })).state.clusters.svc!.hosts.map(
      (h) => h.failedActiveHc,
    );
  assert.deepEqual(await flags(350), [true, false, false], 'the second failure is held in the window');
  assert.deepEqual(await flags(1099), [true, false, false]);
  assert.deepEqual(await flags(1100), [false, true, false], 'the window closes 1 s after the first delivery');
  const bySeq = await replayLog(log, { target: { seq: 4 } });
  assert.deepEqual(
    bySeq.state.clusters.svc!.hosts.map((h) => h.failedActiveHc),
    [true, false, false],
  );
});

test('a malformed line stops the replay with its line number, unless skipped and counted', async () => {
  const lines = scenarioLog(SCENARIOS['runtime-changes']!).split('\n');
  lines.splice(3, 0, '{"seq": "three"}', 'not json at all');
  const log = join(scratch, 'bad.ndjson');
  writeFileSync(log, lines.join('\n'));
  await assert.rejects(replayLog(log), (err: unknown) => err instanceof ReplayError && err.line === 4);
  const skipped = await replayLog(log, { skipBadLines: true });
  assert.deepEqual(
    skipped.badLines.map((b) => b.line),
    [4, 5],
  );
  assert.equal(skipped.events, 4);
  assert.equal(skipped.state.runtime.layers[1]!.values['upstream.use_http2'], 'true');
});

test('a torn last line is ignored and reported, the lines before it replay', async () => {
  const text = scenarioLog(SCENARIOS['runtime-changes']!);
  const log = join(scratch, 'torn.ndjson');
  writeFileSync(log, text + '{"seq":5,"at":17');
  const result = await replayLog(log);
  assert.equal(result.truncatedTail, 6);
  assert.equal(result.lastSeq, 4);
  assert.deepEqual(result.badLines, []);
});

test('a torn last line a newline ended (a write cut by a full disk) is reported as torn, not bad', async () => {
  const text = scenarioLog(SCENARIOS['runtime-changes']!);
  const log = join(scratch, 'torn-newline.ndjson');
  writeFileSync(log, `${text}{"seq":5,"at":17\n\n`);
  const result = await replayLog(log);
  assert.equal(result.truncatedTail, 6);
  assert.equal(result.lastSeq, 4);
  assert.deepEqual(result.badLines, []);
  // The same line with a line after it is bad: only the last line can be torn.
  writeFileSync(log, `${text}{"seq":5,"at":17\n${text.split('\n')[1]}\n`);
  await assert.rejects(replayLog(log), (err: unknown) => err instanceof ReplayError && err.line === 6);
});

test('starting from a checkpoint folds to the same snapshots as folding from the start', async () => {
  const steps = SCENARIOS['health-flaps']!;
  const full = join(repoRoot, 'fixtures', 'health-flaps', 'events.ndjson');
  // A checkpoint after seq 2 (nothing held then): the state a full replay has there.
  const at2 = await replayLog(full, { target: { seq: 2 } });
  const lines = scenarioLog(steps).split('\n');
  const poisoned = {
    ...at2.state,
    runtime: { layers: [{ name: 'marker', kind: 'admin' as const, values: {} }] },
  };
  lines.splice(3, 0, checkpointLine({ seq: 2, at: at2.state.at, state: poisoned }).trimEnd());
  const log = join(scratch, 'checkpointed.ndjson');
  writeFileSync(log, lines.join('\n'));
  const fromCheckpoint = await replayLog(log);
  assert.equal(fromCheckpoint.startedFrom, 2);
  assert.equal(fromCheckpoint.state.runtime.layers[0]!.name, 'marker', 'the checkpoint was used');
  const ignoring = await replayLog(log, { ignoreCheckpoints: true });
  const reference = await replayLog(full);
  assert.equal(goldenText(ignoring.state), goldenText(reference.state));
  assert.deepEqual(fromCheckpoint.state.clusters, reference.state.clusters);
  // A rotated file starts at its checkpoint: what came before is in the previous file.
  const rotated = join(scratch, 'rotated.ndjson');
  writeFileSync(rotated, [lines[0], ...lines.slice(3)].join('\n'));
  assert.equal((await replayLog(rotated)).startedFrom, 2);
  await assert.rejects(replayLog(rotated, { target: { seq: 1 } }), /before the start/);
});

test('an event type this build does not know changes nothing and does not stop the replay', async () => {
  const log = join(scratch, 'future.ndjson');
  const text = scenarioLog(SCENARIOS['runtime-changes']!);
  const extra = `${JSON.stringify({ seq: 5, at: 1, source: 'x', event: { type: 'future/thing' } })}\n`;
  const more = `${JSON.stringify({ seq: 6, at: 2, source: 'x', event: runtimeModified({ values: { q: '1' } }) })}\n`;
  writeFileSync(log, text + extra + more);
  const result = await replayLog(log);
  assert.equal(result.lastSeq, 6);
  assert.equal(result.state.runtime.layers[1]!.values.q, '1');
});

test('a header in mid-file: a restart folds on from the initial state, a rotation with its checkpoint does not', async () => {
  const line = (seq: number, event: object) =>
    `${JSON.stringify({ seq, at: 1000 + seq, source: 'test', event })}\n`;
  const [header] = scenarioLog([]).split('\n');
  const bootstrap = JSON.parse(scenarioLog(SCENARIOS['runtime-changes']!).split('\n')[1]!).event;
  const first = `${header}\n${line(1, bootstrap)}${line(2, runtimeModified({ values: { first: '1' } }))}`;
  // Restart: the second run's header, then its own bootstrap, numbered on.
  const restarted = join(scratch, 'restarted.ndjson');
  writeFileSync(
    restarted,
    `${first}${header}\n${line(3, bootstrap)}${line(4, runtimeModified({ values: { second: '2' } }))}`,
  );
  const values = (state: Awaited<ReturnType<typeof replayLog>>['state']) =>
    Object.assign({}, ...state.runtime.layers.map((l) => l.values)) as Record<string, string>;
  const end = await replayLog(restarted);
  assert.deepEqual([values(end.state).first, values(end.state).second], [undefined, '2']);
  assert.equal(end.events, 4);
  const inFirst = await replayLog(restarted, { target: { seq: 2 } });
  assert.deepEqual([values(inFirst.state).first, values(inFirst.state).second], ['1', undefined]);
  // Rotation onto the same path: header and checkpoint, then the same run goes on.
  const atTwo = (await replayLog(restarted, { target: { seq: 2 } })).state;
  const rotated = join(scratch, 'reopened-in-place.ndjson');
  writeFileSync(
    rotated,
    `${first}${header}\n${checkpointLine({ seq: 2, at: 1002, state: atTwo })}${line(3, runtimeModified({ values: { second: '2' } }))}`,
  );
  for (const ignoreCheckpoints of [false, true]) {
    const state = (await replayLog(rotated, { ignoreCheckpoints })).state;
    assert.deepEqual(
      [values(state).first, values(state).second],
      ['1', '2'],
      `ignoreCheckpoints ${ignoreCheckpoints}`,
    );
  }
});
