/**
 * The statsd lines of a flush and their packing into datagrams: every line goes exactly once,
 * in order, and no datagram passes `max_bytes_per_datagram` unless one line alone does.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { FlushLatch } from '../../../src/stats/sinks/snapshot.js';
import { datagrams, LineMaker } from '../../../src/stats/sinks/statsd-lines.js';
import { StatsStore } from '../../../src/stats/store.js';
import { TagProducer } from '../../../src/stats/tags.js';

const RUNS = Number(process.env.FUZZ_RUNS ?? 300);

describe('statsd lines', () => {
  it('timers: one line per sample at its bin, two significant digits; a negative gauge sends 0', () => {
    const stats = new StatsStore();
    const h = stats.histogram('t');
    for (const v of [0, 0.5, 3, 99, 1234, 1234]) h.record(v);
    stats.gauge('g').sub(2);
    stats.flush();
    const lines = new LineMaker({ prefix: 'envoy', tags: null }).lines(new FlushLatch().snapshot(stats));
    assert.deepEqual(lines.sort(), [
      'envoy.g:0|g',
      'envoy.t:0.5|ms',
      'envoy.t:0|ms',
      'envoy.t:1200|ms',
      'envoy.t:1200|ms',
      'envoy.t:3|ms',
      'envoy.t:99|ms',
    ]);
  });

  it('a DogStatsD line with no tag has no tag part', () => {
    const stats = new StatsStore();
    stats.counter('server.total_connections_seen').inc();
    const maker = new LineMaker({ prefix: 'envoy', tags: new TagProducer() });
    assert.deepEqual(maker.lines(new FlushLatch().snapshot(stats)), [
      'envoy.server.total_connections_seen:1|c',
    ]);
  });

  it('packs every line once, in order, within the limit (property)', () => {
    fc.assert(
      fc.property(
        fc.array(fc.string({ minLength: 1, maxLength: 40, unit: 'grapheme' }), { maxLength: 60 }),
        fc.integer({ min: 0, max: 200 }),
        (lines, max) => {
          const clean = lines.map((l) => l.replaceAll('\n', ' '));
          const out = datagrams(clean, max);
          assert.deepEqual(
            out.flatMap((d) => d.split('\n')),
            clean,
          );
          if (max === 0) assert.equal(out.length, clean.length);
          for (const d of out) assert.ok(Buffer.byteLength(d) <= max || !d.includes('\n') || max === 0, d);
        },
      ),
      { seed: 8125, numRuns: RUNS },
    );
  });
});
