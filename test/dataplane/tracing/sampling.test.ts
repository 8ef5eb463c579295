import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Report } from '../../../src/bootstrap/report.js';
import { compileHcmTracing } from '../../../src/dataplane/tracing/config.js';
import { decideTrace, traceReason } from '../../../src/dataplane/tracing/sampling.js';

const spec = (raw: Record<string, unknown> = {}) =>
  compileHcmTracing(raw as never, 'tracing', new Report('t'));
const none = { clientTraceId: false, forceTrace: false };
const noRuntime = () => undefined;
// First 8 hex digits 0x00001388 = 5000: the draw is 5000 of 10000.
const ID = '00001388-aaaa-4bbb-8ccc-dddddddddddd';

describe('the tracing decision in x-request-id', () => {
  it('samples by the id: a draw under random_sampling is sampled (b), else not traced (4)', () => {
    assert.equal(decideTrace(ID, none, spec(), noRuntime, 0)[14], 'b');
    assert.equal(decideTrace(ID, none, spec({ random_sampling: { value: 50.01 } }), noRuntime, 0)[14], 'b');
    assert.equal(decideTrace(ID, none, spec({ random_sampling: { value: 50 } }), noRuntime, 0)[14], '4');
    assert.equal(
      decideTrace(ID, none, spec({ random_sampling: {} }), noRuntime, 0)[14],
      '4',
      'empty Percent is 0',
    );
  });

  it('client trace id and force trace come first; overall sampling turns everything off', () => {
    const client = { clientTraceId: true, forceTrace: false };
    assert.equal(decideTrace(ID, client, spec({ random_sampling: {} }), noRuntime, 0)[14], 'a');
    assert.equal(decideTrace(ID, { clientTraceId: false, forceTrace: true }, spec(), noRuntime, 0)[14], '9');
    assert.equal(decideTrace(ID, client, spec({ overall_sampling: { value: 10 } }), noRuntime, 0)[14], '4');
  });

  it('an id already decided keeps its decision; runtime keys override the fractions as percentages', () => {
    const sampled = `${ID.slice(0, 14)}b${ID.slice(15)}`;
    assert.equal(decideTrace(sampled, none, spec({ random_sampling: {} }), noRuntime, 0), sampled);
    const runtime = (key: string) => (key === 'tracing.random_sampling' ? '0' : undefined);
    assert.equal(decideTrace(ID, none, spec(), runtime, 0)[14], '4');
  });

  it('leaves ids that are not UUIDs alone, and those are not traceable', () => {
    assert.equal(decideTrace('not-an-id', none, spec(), noRuntime, 0), 'not-an-id');
    assert.equal(decideTrace('00001388', none, spec(), noRuntime, 0), '00001388');
    assert.equal(traceReason('00001388'), 'not_traceable');
    assert.equal(traceReason(undefined), 'not_traceable');
    assert.equal(traceReason(`${ID.slice(0, 14)}9${ID.slice(15)}`), 'service_forced');
  });
});
