/**
 * Root cause: a subscriber that threw while judging an update (a bug a management server's
 * bytes reached) threw out of the gRPC stream's `data` listener, and one that rejected left an
 * unhandled rejection: either ended the process. `judge` makes either a NACK naming it.
 */
import assert from 'node:assert/strict';
import { it } from 'node:test';
import { setPeerFaultSink } from '../../../src/dataplane/codec/peer-guard.js';
import { judge, type Subscriber } from '../../../src/edges/xds/types.js';

function subscriber(onUpdate: Subscriber['onUpdate']): Subscriber {
  return { onUpdate, onFailure() {}, onAttempt() {} };
}

it('a throw while judging is a rejection naming it, counted and logged', () => {
  let counted = 0;
  const logged: string[] = [];
  setPeerFaultSink({ count: () => counted++, log: (_err, where) => logged.push(where) });
  const seen: Array<string | null> = [];
  judge(
    subscriber(() => {
      throw new RangeError('Invalid array length');
    }),
    {},
    (error) => seen.push(error),
  );
  assert.deepEqual(seen, ['internal error while applying the update: Invalid array length']);
  assert.equal(counted, 1);
  assert.deepEqual(logged, ['xDS update']);
});

it('a rejected judgement is a rejection naming it; an accepted or rejected one passes as it is', async () => {
  setPeerFaultSink({ count() {}, log() {} });
  const seen: Array<string | null> = [];
  await new Promise<void>((resolve) =>
    judge(
      subscriber(() => Promise.reject(new Error('bind failed oddly'))),
      {},
      (error) => {
        seen.push(error);
        resolve();
      },
    ),
  );
  judge(
    subscriber(() => null),
    {},
    (error) => seen.push(error),
  );
  judge(
    subscriber(() => 'cluster c: bad'),
    {},
    (error) => seen.push(error),
  );
  assert.deepEqual(seen, [
    'internal error while applying the update: bind failed oddly',
    null,
    'cluster c: bad',
  ]);
});
