import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { durationFromMessage, formatDuration, parseDuration } from '../../src/bootstrap/duration.js';

describe('durations', () => {
  it('formats with 0, 3, 6 or 9 fractional digits', () => {
    const canonical = (text: string) => formatDuration(parseDuration(text)!);
    assert.equal(canonical('0.25s'), '0.250s');
    assert.equal(canonical('5s'), '5s');
    assert.equal(canonical('1.000001s'), '1.000001s');
    assert.equal(canonical('1.000000001s'), '1.000000001s');
    assert.equal(canonical('-1.5s'), '-1.500s');
    assert.equal(canonical('-0s'), '0s');
  });

  it('rejects text that is not a duration', () => {
    for (const bad of ['5', '5ms', '1.5 s', 's', '1.0000000001s'])
      assert.equal(parseDuration(bad), undefined, bad);
  });

  it('formats decoded seconds and nanos', () => {
    assert.equal(durationFromMessage(0, 250_000_000), '0.250s');
    assert.equal(durationFromMessage('30', 0), '30s');
    assert.equal(durationFromMessage(undefined, undefined), '0s');
  });
});
