/**
 * The timeline written offline from an event log (`proxy replay --timeline --format html`)
 * shows each event with the same change as the live page did: the same rows, the same JSON
 * Patch per event, merge-window deliveries attributed alike.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, it } from 'node:test';
import { activeHealthChanged, outlierChanged, runtimeModified } from '../../events/index.js';
import { adminBootstrap, scratchDir, startTestAdmin, type TestAdmin } from '../helpers/admin.js';
import { runProxy } from '../helpers/cli.js';
import { cluster } from '../helpers/event-log.js';

const scratch = scratchDir();
const log = join(scratch.dir, 'events.ndjson');
let admin: TestAdmin;

before(async () => {
  admin = await startTestAdmin(
    adminBootstrap({
      static_resources: { clusters: [cluster('svc', ['10.0.0.1:80', '10.0.0.2:80', '10.0.0.3:80'], '0.3s')] },
    }),
    { eventLog: log },
    { history: {} },
  );
});
after(async () => {
  await admin?.close();
  scratch.remove();
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Each row's sequence number and its JSON Patch text (or what stands in for it). */
function patches(page: string): Map<number, string> {
  const rows = [...page.matchAll(/<tr id='seq-(\d+)'.*?<\/tr>/gs)];
  return new Map(
    rows.map((m) => [
      Number(m[1]),
      /<pre>(.*?)<\/pre>/s.exec(m[0])?.[1] ?? /class='muted'>(.*?)</.exec(m[0])?.[1] ?? '',
    ]),
  );
}

it('the page from the log shows every event with the change the live page showed', async () => {
  const { store } = admin.ctx;
  // A 0.3 s merge window: the first failure goes through, the second is held and delivered later.
  store.dispatch(
    activeHealthChanged({ cluster: 'svc', address: '10.0.0.1:80', healthy: false }),
    'health_check',
  );
  store.dispatch(
    activeHealthChanged({ cluster: 'svc', address: '10.0.0.2:80', healthy: false }),
    'health_check',
  );
  await sleep(50);
  store.dispatch(runtimeModified({ values: { 'feature.x': 'on' } }), 'admin');
  await sleep(450);
  store.dispatch(
    outlierChanged({ cluster: 'svc', address: '10.0.0.3:80', ejected: true, reason: 'consecutive_5xx' }),
    'outlier',
  );
  await sleep(50);
  store.dispatch(
    activeHealthChanged({ cluster: 'svc', address: '10.0.0.1:80', healthy: true }),
    'health_check',
  );
  await sleep(500);
  await admin.ctx.eventLog.flush();

  const live = patches(await (await admin.get('/events?format=html&live=off&limit=100')).text());
  const run = await runProxy(['replay', log, '--timeline', '--format', 'html']);
  assert.equal(run.code, 0, run.stderr);
  const offline = patches(run.stdout);
  assert.deepEqual([...offline.keys()], [...live.keys()]);
  assert.ok(live.size >= 7, `${live.size} rows`);
  for (const [seq, patch] of live) assert.equal(offline.get(seq), patch, `seq ${seq}`);
  // The held failure changed nothing when it arrived; its delivery shows with the event before the next.
  assert.ok([...live.values()].some((p) => p.includes('no change to the snapshot')));
});
