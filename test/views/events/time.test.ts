import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  formatLocal,
  formatUtc,
  parseDuration,
  parseTimePoint,
  shortDuration,
} from '../../../views/events/time.js';

// A zone an hour east of UTC in November, so local and UTC readings differ.
process.env.TZ = 'Europe/Paris';

const END = Date.UTC(2026, 10, 23, 9, 30, 0); // 10:30 in Paris

test('event times read in the local zone with its offset, and in UTC', () => {
  assert.equal(formatLocal(END), '2026-11-23 10:30:00.000 +01:00');
  assert.equal(formatUtc(END + 5), '2026-11-23T09:30:00.005Z');
});

test('durations', () => {
  assert.equal(parseDuration('10m'), 600_000);
  assert.equal(parseDuration('1h30m'), 5_400_000);
  assert.equal(parseDuration('500ms'), 500);
  assert.equal(parseDuration('1.5s'), 1500);
  assert.equal(parseDuration('10'), null);
  assert.equal(parseDuration('m'), null);
});

test('points as people write them', () => {
  assert.deepEqual(parseTimePoint('42', END), { seq: 42 });
  assert.deepEqual(parseTimePoint('now', END), { time: END });
  assert.deepEqual(parseTimePoint('-5m', END), { time: END - 300_000 });
  assert.deepEqual(parseTimePoint('10m', END), { time: END - 600_000 });
  // Without a zone: local time.
  assert.deepEqual(parseTimePoint('2026-11-23T10:00', END), { time: Date.UTC(2026, 10, 23, 9, 0) });
  assert.deepEqual(parseTimePoint('2026-11-23 10:00:07.25', END), {
    time: Date.UTC(2026, 10, 23, 9, 0, 7, 250),
  });
  assert.deepEqual(parseTimePoint('2026-11-23', END), { time: Date.UTC(2026, 10, 22, 23, 0) });
  // A time of day alone: that time on the local day of the end.
  assert.deepEqual(parseTimePoint('10:15', END), { time: Date.UTC(2026, 10, 23, 9, 15) });
  // With a zone: exactly that instant.
  assert.deepEqual(parseTimePoint('2026-11-23T10:00:00Z', END), { time: Date.UTC(2026, 10, 23, 10, 0) });
  assert.deepEqual(parseTimePoint('2026-11-23T10:00+02:00', END), { time: Date.UTC(2026, 10, 23, 8, 0) });
});

test('what is not a point is refused with the forms that are', () => {
  for (const bad of ['yesterday', '2026-02-30T10:00', '25:00', '2026-11-23T10:00:00+2', '-', '']) {
    const result = parseTimePoint(bad, END);
    assert.equal(typeof result, 'string', `${bad} -> ${JSON.stringify(result)}`);
    assert.match(result as string, /sequence number.*RFC 3339.*time ago/);
  }
});

test('writes uptimes with their two largest units', () => {
  assert.equal(shortDuration(0), '0s');
  assert.equal(shortDuration(42_900), '42s');
  assert.equal(shortDuration(423_000), '7m 3s');
  assert.equal(shortDuration(7_200_000), '2h');
  assert.equal(shortDuration(3 * 86400_000 + 4 * 3600_000 + 59_000), '3d 4h');
});
