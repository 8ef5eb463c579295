/**
 * W3C trace context as the OpenTelemetry tracer reads and writes it: well-formed `traceparent`
 * values, every malformed one refused as invalid (never thrown), `tracestate` values joined, and
 * what is written back; any header a client sends gives a context, none, or 'invalid'.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { extractTraceContext, injectTraceContext } from '../../../src/dataplane/tracing/traceparent.js';

const TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const SPAN = '00f067aa0ba902b7';

describe('traceparent', () => {
  it('reads the ids lowercase, the sampled bit of the flags, and every tracestate joined', () => {
    assert.deepEqual(
      extractTraceContext([
        'traceparent',
        `00-${TRACE.toUpperCase()}-${SPAN}-03`,
        'tracestate',
        'a=1',
        'tracestate',
        'b=2',
      ]),
      { traceId: TRACE, parentId: SPAN, sampled: true, traceState: 'a=1,b=2' },
    );
    assert.equal(
      (extractTraceContext(['traceparent', `00-${TRACE}-${SPAN}-00`]) as { sampled: boolean }).sampled,
      false,
    );
    assert.equal(extractTraceContext(['x-b3-traceid', TRACE]), null, 'no traceparent: no context');
  });

  it('refuses malformed values as invalid', () => {
    for (const bad of [
      '',
      '00',
      `00-${TRACE}-${SPAN}`,
      `00-${TRACE}-${SPAN}-01-extra`,
      `ff-${TRACE}-${SPAN}-01`,
      `00-${'0'.repeat(32)}-${SPAN}-01`,
      `00-${TRACE}-${'0'.repeat(16)}-01`,
      `00-${TRACE.slice(1)}-${SPAN}-01`,
      `00-${TRACE}-${SPAN}-0g`,
      ` 00-${TRACE}-${SPAN}-01`,
    ])
      assert.equal(extractTraceContext(['traceparent', bad]), 'invalid', bad);
  });

  it("writes this proxy's span as the parent, the flag, and the trace state only when there is one", () => {
    const h = ['traceparent', 'old', 'tracestate', 'old'];
    injectTraceContext(h, { traceId: TRACE, spanId: SPAN, sampled: false, traceState: 'a=1' });
    assert.deepEqual(h, ['traceparent', `00-${TRACE}-${SPAN}-00`, 'tracestate', 'a=1']);
    const bare: string[] = [];
    injectTraceContext(bare, { traceId: TRACE, spanId: SPAN, sampled: true, traceState: '' });
    assert.deepEqual(bare, ['traceparent', `00-${TRACE}-${SPAN}-01`]);
  });

  it('any header a client sends gives a well-formed context, none, or invalid, and a context round-trips', () => {
    const hex = (n: number) =>
      fc.string({
        unit: fc.constantFrom(...'0123456789abcdefABCDEF-xz '.split('')),
        minLength: n,
        maxLength: n,
      });
    const value = fc.oneof(
      fc.string(),
      fc.tuple(hex(2), hex(32), hex(16), hex(2)).map((parts) => parts.join('-')),
    );
    fc.assert(
      fc.property(value, fc.array(fc.string(), { maxLength: 3 }), (traceparent, states) => {
        const headers = ['traceparent', traceparent, ...states.flatMap((s) => ['tracestate', s])];
        const ctx = extractTraceContext(headers);
        if (ctx === 'invalid') return;
        assert.ok(ctx !== null);
        assert.match(ctx.traceId, /^[0-9a-f]{32}$/);
        assert.match(ctx.parentId, /^[0-9a-f]{16}$/);
        const out: string[] = [];
        injectTraceContext(out, {
          traceId: ctx.traceId,
          spanId: ctx.parentId,
          sampled: ctx.sampled,
          traceState: '',
        });
        assert.deepEqual(extractTraceContext(out), { ...ctx, traceState: '' });
      }),
      { seed: 2930, numRuns: Number(process.env.FUZZ_RUNS ?? 300) },
    );
  });
});
