/**
 * The request body an upstream attempt keeps for another try (src/dataplane/http/filters/router/
 * request-body.ts): pieces wait for a ready upstream, a retry sends all of them again, and past
 * the cluster's buffer limit they are dropped once sent, the sender paused while they wait.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { RequestBody } from '../../../../../src/dataplane/http/filters/router/request-body.js';
import type { UpstreamRequest } from '../../../../../src/dataplane/pool/types.js';

/** An upstream request that records what is written to it. */
function upstream(): UpstreamRequest & { written: string[] } {
  const written: string[] = [];
  return {
    written,
    write: (chunk: Buffer) => written.push(chunk.toString()) > 0,
    end: () => {},
    abort: () => {},
    pause: () => {},
    resume: () => {},
    onWritable: null,
    localAddress: () => '',
  };
}

const b = (s: string) => Buffer.from(s);

test('pieces wait for the upstream, go in order once it is ready, and all of them again on a retry', () => {
  const body = new RequestBody(100);
  assert.equal(body.add(b('ab'), false), false);
  assert.equal(body.add(b('cd'), false), false);
  const first = upstream();
  assert.equal(body.flush(first), false, 'kept: reading need not resume');
  assert.deepEqual(first.written, ['ab', 'cd']);
  // The caller writes later pieces itself once the upstream is ready; they are kept too.
  assert.equal(body.add(b('ef'), true), false);
  assert.deepEqual(first.written, ['ab', 'cd'], 'a piece added while writing is not written twice');
  body.rewind();
  const retry = upstream();
  body.flush(retry);
  assert.deepEqual(retry.written, ['ab', 'cd', 'ef']);
  assert.equal(body.kept, true);
});

test('past the limit while waiting: the sender pauses; once sent the pieces are gone and no retry is possible', () => {
  const body = new RequestBody(4);
  assert.equal(body.add(b('abc'), false), false);
  assert.equal(body.add(b('de'), false), true, 'over the limit with nowhere to send it: pause');
  assert.equal(body.kept, false);
  const up = upstream();
  assert.equal(body.flush(up), true, 'released: reading may resume');
  assert.deepEqual(up.written, ['abc', 'de']);
  body.rewind();
  const retry = upstream();
  body.flush(retry);
  assert.deepEqual(retry.written, [], 'nothing is kept for another try');
});

test('past the limit while writing: nothing more is kept, and the sender is not paused', () => {
  const body = new RequestBody(4);
  const up = upstream();
  body.flush(up);
  assert.equal(body.add(b('abc'), true), false);
  assert.equal(body.add(b('de'), true), false);
  assert.equal(body.kept, false);
  assert.equal(body.add(b('f'), true), false);
  body.rewind();
  const retry = upstream();
  assert.equal(body.flush(retry), true);
  assert.deepEqual(retry.written, []);
});

test('property: while kept, a retry gets exactly the bytes added, in order, however they were split', () => {
  fc.assert(
    fc.property(
      fc.array(fc.tuple(fc.string({ minLength: 1, maxLength: 8 }), fc.boolean()), { maxLength: 20 }),
      (pieces) => {
        const body = new RequestBody(1 << 20);
        const up = upstream();
        let ready = false;
        for (const [text, becomeReady] of pieces) {
          if (becomeReady && !ready) {
            body.flush(up);
            ready = true;
          }
          body.add(b(text), ready);
          if (ready) up.write(b(text));
        }
        if (!ready) body.flush(up);
        const all = pieces.map(([t]) => t).join('');
        assert.equal(up.written.join(''), all);
        body.rewind();
        const retry = upstream();
        body.flush(retry);
        assert.equal(retry.written.join(''), all);
      },
    ),
    { numRuns: Number(process.env.FUZZ_RUNS ?? 200) },
  );
});
