/** `proxy replay --timeline` and `--diff A..B` on the recorded fixtures, as a person runs them. */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { repoRoot, runProxy } from '../helpers/cli.js';

const FLAPS = join(repoRoot, 'fixtures/health-flaps/events.ndjson');
const LIVE = join(repoRoot, 'fixtures/live-run/events.ndjson');
/** Local time an hour east of UTC, so the two columns differ. */
const PARIS = { TZ: 'Europe/Paris' };

const replay = (args: string[]) => runProxy(['replay', ...args], PARIS, 20_000);

describe('proxy replay --timeline', () => {
  it('lists every event with local and UTC time, source, type and summary', async () => {
    const run = await replay([FLAPS, '--timeline']);
    assert.equal(run.code, 0, run.stderr);
    const lines = run.stdout.trimEnd().split('\n');
    assert.match(lines[0]!, /seq\s+local time \(UTC\)\s+source\s+type\s+summary/);
    assert.equal(lines.length, 11);
    assert.equal(
      lines[6],
      '  6  2026-11-21 15:00:00.900 +01:00  14:00:00.900Z  outlier  health/outlier-changed  ' +
        'cluster svc: host 10.0.0.3:80 ejected by outlier detection (consecutive 5xx)',
    );
    assert.match(run.stderr, /^listed 10 of 10 events\n$/);
  });

  it('filters by host, type, source and a local time range', async () => {
    const byHost = await replay([FLAPS, '--timeline', '--host', '10.0.0.3', '--format', 'json']);
    assert.equal(byHost.code, 0, byHost.stderr);
    const entries = JSON.parse(byHost.stdout) as Array<{
      seq: number;
      local: string;
      utc: string;
      summary: string;
    }>;
    assert.deepEqual(
      entries.map((e) => e.seq),
      [6, 8, 9],
    );
    assert.equal(entries[0]!.utc, '2026-11-21T14:00:00.900Z');
    assert.equal(entries[0]!.local, '2026-11-21 15:00:00.900 +01:00');
    const ranged = await replay([
      FLAPS,
      '--timeline',
      '--type',
      'health/active',
      '--source=health_check',
      '--since',
      '2026-11-21T15:00:00.200',
      '--until',
      '15:00:01',
    ]);
    assert.equal(ranged.code, 0, ranged.stderr);
    assert.deepEqual(
      ranged.stdout
        .trim()
        .split('\n')
        .slice(1)
        .map((l) => Number(l.trim().split(' ')[0])),
      [4, 5],
    );
    assert.match(
      ranged.stderr,
      /listed 2 of 10 events \(since 2026-11-21T14:00:00\.200Z, until .*type health\/active/,
    );
  });

  it('reads times ago from the end of the log, dash and all', async () => {
    // The last event of the live run is seq 11; 1 s before it, only the shutdown and its neighbours.
    const run = await replay([LIVE, '--timeline', '--since', '-1s', '--type', 'server/']);
    assert.equal(run.code, 0, run.stderr);
    assert.match(run.stdout, /server\/shutdown-requested {2}shutdown requested: admin \/quitquitquit/);
    assert.doesNotMatch(run.stdout, /bootstrap-loaded/);
    const at = await replay([LIVE, '--at', '-0ms', '--view', 'listeners']);
    assert.equal(at.code, 0, at.stderr);
    assert.match(at.stderr, /up to seq 11/);
  });

  it('writes the timeline page offline, each event with the change it made', async () => {
    const run = await replay([FLAPS, '--timeline', '--format', 'html', '--type', 'health/']);
    assert.equal(run.code, 0, run.stderr);
    const page = run.stdout;
    assert.match(page, /^<!DOCTYPE html>/);
    assert.match(page, /replayed from <code>.*health-flaps\/events\.ndjson<\/code>/);
    assert.match(page, /filters: type health\//);
    const rows = [...page.matchAll(/<tr id='seq-(\d+)'.*?<\/tr>/gs)].map(
      (m) => [Number(m[1]), m[0]] as const,
    );
    assert.deepEqual(
      rows.map(([seq]) => seq),
      [3, 4, 5, 6, 7, 9, 10],
    );
    // The 1 s merge window held seq 4 and 5; they were delivered before seq 7 arrived, so the
    // snapshot changed with seq 6 by six operations (three verdicts and when each changed), as
    // /snapshots/diff?from=5&to=6 says live.
    const change = new Map(
      rows.map(([seq, html]) => [seq, /JSON Patch \((\d+) operation/.exec(html)?.[1] ?? 'none']),
    );
    assert.deepEqual(Object.fromEntries(change), {
      3: '2',
      4: 'none',
      5: 'none',
      6: '6',
      7: 'none',
      9: '2',
      10: '2',
    });
    // Nothing to link to, follow or run offline.
    assert.doesNotMatch(page, /<script>|\?at=|<form/);
  });

  it('refuses a point it cannot read, naming the forms it can', async () => {
    const run = await replay([FLAPS, '--timeline', '--since', 'yesterday']);
    assert.equal(run.code, 1);
    assert.match(run.stderr, /--since: 'yesterday' is not a sequence number, an RFC 3339 time/);
    const stray = await replay([FLAPS, '--cluster', 'svc']);
    assert.equal(stray.code, 1);
    assert.match(stray.stderr, /--cluster filters the --timeline/);
  });
});

describe('proxy replay --diff A..B', () => {
  it('prints the events between, the change in words and the JSON Patch', async () => {
    const run = await replay([LIVE, '--diff', '5..7']);
    assert.equal(run.code, 0, run.stderr);
    assert.match(run.stdout, /^from seq 5 \(/);
    assert.match(
      run.stdout,
      /2 events in between:\n\s+6 .*server\/healthcheck-failed .*\n\s+7 .*runtime\/modified/,
    );
    assert.match(run.stdout, /runtime layer admin, key feature\.canary removed \(was "on"\)/);
    assert.match(run.stdout, /server: healthCheckFailed false -> true/);
    const patch = JSON.parse(run.stdout.slice(run.stdout.indexOf('JSON Patch:\n') + 12));
    assert.deepEqual(patch, [
      { op: 'remove', path: '/runtime/layers/admin/values/feature.canary' },
      { op: 'replace', path: '/server/healthCheckFailed', value: true },
    ]);
    const json = await replay([LIVE, '--diff', '5..', '--format', 'json']);
    assert.equal(json.code, 0, json.stderr);
    const report = JSON.parse(json.stdout);
    assert.equal(report.to.seq, 11);
    assert.deepEqual(
      report.events.map((e: { seq: number }) => e.seq),
      [6, 7, 8, 9, 10, 11],
    );
    assert.ok(report.changes.length > 0 && report.patch.length === report.changes.length);
  });
});
