import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { extractContext, extractSampled, injectB3 } from '../../../src/dataplane/tracing/b3.js';

const hex = (n: number) => fc.stringMatching(new RegExp(`^[0-9a-f]{${n}}$`));

describe('B3 extraction', () => {
  it('reads the multi-header form, 64 and 128-bit trace ids, ids padded to 16 digits', () => {
    assert.deepEqual(
      extractContext(['x-b3-traceid', 'ABC', 'x-b3-spanid', '1', 'x-b3-parentspanid', '2'], true),
      {
        traceId: '0000000000000abc',
        spanId: '0000000000000001',
        parentId: '0000000000000002',
        sampled: true,
      },
    );
    const trace = '463ac35c9f6413ad48485a3953bb6124';
    const ctx = extractContext(['x-b3-traceid', trace, 'x-b3-spanid', 'a2fb4a1d1a96d312'], false);
    assert.ok(ctx !== null && ctx !== 'invalid');
    assert.equal(ctx.traceId, trace);
    assert.equal(ctx.parentId, '');
  });

  it('has no context without both trace and span ids, and refuses malformed ids', () => {
    assert.equal(extractContext(['x-b3-traceid', 'abc'], true), null);
    assert.equal(extractContext(['x-b3-traceid', 'xyz', 'x-b3-spanid', '1'], true), 'invalid');
    assert.equal(extractContext(['x-b3-traceid', '1', 'x-b3-spanid', '12345678901234567'], true), 'invalid');
    assert.equal(extractContext(['b3', 'x'], true), 'invalid');
    assert.equal(extractContext(['b3', '1'], true), null);
    assert.equal(extractContext(['b3', '80f198ee56343ba8-e457b5a2e4d86bd1-x'], true), 'invalid');
  });

  it('the single b3 header wins over the multi-header form, with its flag and parent', () => {
    const headers = [
      'x-b3-traceid',
      '0000000000000001',
      'x-b3-spanid',
      '0000000000000002',
      'b3',
      '80f198ee56343ba864fe8b2a57d3eff7-e457b5a2e4d86bd1-0-05e3ac9a4f6e3b90',
    ];
    assert.equal(extractSampled(headers, true), false);
    assert.deepEqual(extractContext(headers, false), {
      traceId: '80f198ee56343ba864fe8b2a57d3eff7',
      spanId: 'e457b5a2e4d86bd1',
      parentId: '05e3ac9a4f6e3b90',
      sampled: false,
    });
  });

  it('sampling: b3 flag (d is sampled), else x-b3-sampled 1 or true, else the decision', () => {
    assert.equal(extractSampled(['b3', 'd'], false), true);
    assert.equal(extractSampled(['b3', '0'], true), false);
    assert.equal(extractSampled(['b3', 'abc'], true), true, 'an odd length keeps the decision');
    assert.equal(extractSampled(['x-b3-sampled', 'true'], false), true);
    assert.equal(extractSampled(['x-b3-sampled', '0'], true), false);
    assert.equal(extractSampled(['x-b3-sampled', 'yes'], true), false);
    assert.equal(extractSampled([], true), true);
  });

  it('what is injected reads back as the same context (property, 64 and 128-bit)', () => {
    fc.assert(
      fc.property(
        fc.oneof(hex(16), hex(32)),
        hex(16),
        fc.option(hex(16), { nil: '' }),
        fc.boolean(),
        (traceId, spanId, parentId, sampled) => {
          const headers = ['x-b3-spanid', 'stale'];
          injectB3(headers, { traceId, spanId, parentId, sampled });
          assert.deepEqual(extractContext(headers, extractSampled(headers, !sampled)), {
            traceId,
            spanId,
            parentId,
            sampled,
          });
          const single = `${traceId}-${spanId}-${sampled ? '1' : '0'}${parentId ? `-${parentId}` : ''}`;
          assert.deepEqual(extractContext(['b3', single], extractSampled(['b3', single], !sampled)), {
            traceId,
            spanId,
            parentId,
            sampled,
          });
        },
      ),
      { seed: 42, numRuns: 200 },
    );
  });
});
