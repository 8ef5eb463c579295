/**
 * fixtures/health-incident: a real run through a health incident (an active check failing,
 * recovering and failing again; a consecutive-5xx ejection), recorded by
 * scripts/record-health-incident.sh. Replaying its event log renders the /clusters the live
 * run showed, health flags included; only the traffic counters, which are figures and not
 * events, read 0 in the replay.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { repoRoot, runProxy } from '../../helpers/cli.js';

const DIR = join(repoRoot, 'fixtures/health-incident');
const COUNTER = /::(cx|rq)_\w+::\d+$/;

test('the replay of a recorded health incident renders the live run’s /clusters', async () => {
  const run = await runProxy(['replay', join(DIR, 'events.ndjson'), '--view', 'clusters'], {}, 20_000);
  assert.equal(run.code, 0, run.stderr);
  const live = readFileSync(join(DIR, 'clusters.live.txt'), 'utf8').trimEnd().split('\n');
  const replayed = run.stdout.trimEnd().split('\n');
  assert.equal(replayed.length, live.length);
  const flags = replayed.filter((l) => l.includes('::health_flags::'));
  assert.deepEqual(
    flags.map((l) => l.replace(/127\.0\.0\.1:\d+/, 'host')),
    ['web::host::health_flags::/failed_outlier_check', 'web::host::health_flags::/failed_active_hc'],
  );
  for (const [i, line] of live.entries()) {
    if (COUNTER.test(line))
      assert.match(replayed[i] ?? '', /::0$/, `a counter reads 0 in the replay: ${line}`);
    else assert.equal(replayed[i], line);
  }
});
