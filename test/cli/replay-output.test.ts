/**
 * `proxy replay ... | wc -c` stopped at exactly 65,536 bytes (issue 11, finding 8). Root
 * cause: stdout on a pipe is written asynchronously and `main` called `process.exit` with
 * the rest still queued. `runReplay` now resolves only once everything it printed is written.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { bootstrapLoaded } from '../../events/index.js';
import { replayLog } from '../../src/control/replay.js';
import { renderReplayView } from '../../src/cli/replay-views.js';
import { runProxy } from '../helpers/cli.js';
import { bootstrapWith, cluster } from '../helpers/event-log.js';
import { scenarioLog } from '../helpers/event-log-scenarios.js';

const dir = mkdtempSync(join(tmpdir(), 'replay-output-'));
after(() => rmSync(dir, { recursive: true, force: true }));

test('a replay printing more than 1 MiB through a pipe prints all of it', async () => {
  const hosts = Array.from(
    { length: 6000 },
    (_, i) => `10.${(i >> 8) & 255}.${i & 255}.1:${8000 + (i % 50)}`,
  );
  const log = join(dir, 'big.ndjson');
  writeFileSync(
    log,
    scenarioLog([
      [
        0,
        'bootstrap',
        bootstrapLoaded({
          bootstrap: bootstrapWith([cluster('svc', hosts)]),
          options: {},
          version: 't',
          sources: [],
        }),
      ],
    ]),
  );
  const expected = renderReplayView('snapshot', 'text', (await replayLog(log)).state, null).body;
  assert.ok(expected.length > 1 << 20, `the snapshot is ${expected.length} bytes, not over 1 MiB`);
  const run = await runProxy(['replay', log, '--view', 'snapshot'], {}, 30_000);
  assert.equal(run.code, 0, run.stderr);
  assert.equal(Buffer.byteLength(run.stdout), Buffer.byteLength(expected));
  assert.equal(run.stdout, expected);
  assert.match(run.stderr, /replayed 1 events up to seq 1/);
});
