/** Copies of a rejected update are known by version and resources, whatever their nonce. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { RejectedCopies } from '../../../src/edges/xds/repeats.js';

const response = (version: string, bytes: number[], nonce: string) => ({
  version_info: version,
  resources: [{ type_url: 'type.googleapis.com/envoy.api.v2.Cluster', value: Uint8Array.from(bytes) }],
  type_url: 'type.googleapis.com/envoy.api.v2.Cluster',
  nonce,
});

describe('RejectedCopies', () => {
  it('knows a copy of the last rejection by version and resources, not by nonce, and counts it', () => {
    const copies = new RejectedCopies();
    assert.equal(copies.again(response('v1', [1, 2], 'a')), null, 'nothing rejected yet');
    copies.judged(response('v1', [1, 2], 'a'), 'bad cluster');
    assert.equal(copies.again(response('v1', [1, 2], 'b')), 'bad cluster');
    assert.equal(copies.again(response('v1', [1, 2], 'c')), 'bad cluster');
    assert.equal(copies.again(response('v1', [1, 3], 'd')), null, 'other bytes');
    assert.equal(copies.again(response('v2', [1, 2], 'e')), null, 'another version');
    assert.deepEqual(copies.report(), { version: 'v1', error: 'bad cluster', count: 2 });
    assert.equal(copies.report(), null, 'reported once');
    copies.judged(response('v1', [1, 2], 'f'), null);
    assert.equal(copies.again(response('v1', [1, 2], 'g')), null, 'an accepted update is no rejection');
  });

  it('reads JSON updates (file, REST) and anything a peer sends without throwing', () => {
    const copies = new RejectedCopies();
    fc.assert(
      fc.property(fc.anything(), fc.anything(), (a, b) => {
        copies.judged(a, 'rejected');
        assert.equal(copies.again(a), 'rejected');
        copies.again(b);
      }),
      { numRuns: Number(process.env.FUZZ_RUNS ?? 200) },
    );
  });
});
