import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Report } from '../../../../../src/bootstrap/report.js';
import { compileFault } from '../../../../../src/dataplane/http/filters/fault/config.js';

function compile(raw: Record<string, unknown>): { config: ReturnType<typeof compileFault>; paths: string[] } {
  const report = new Report('t');
  const config = compileFault(raw as never, 'f', report);
  return { config, paths: report.problems.map((p) => p.path) };
}

describe('compileFault', () => {
  it('reads delays, aborts, shares and the runtime keys, defaulting the keys to the reference names', () => {
    const { config, paths } = compile({
      delay: { fixed_delay: '1.5s', percentage: { numerator: 25, denominator: 'TEN_THOUSAND' } },
      abort: { header_abort: {}, percentage: { numerator: 150 } },
      max_active_faults: 3,
      abort_percent_runtime: 'mine.abort',
    });
    assert.deepEqual(paths, []);
    assert.deepEqual(config.delay, { ms: 1500, percent: { numerator: 25, denominator: 10_000 } });
    // A share above the whole is the whole.
    assert.deepEqual(config.abort, { status: 'header', percent: { numerator: 100, denominator: 100 } });
    assert.equal(config.maxActiveFaults, 3);
    assert.equal(config.runtime.abortPercent, 'mine.abort');
    assert.equal(config.runtime.delayPercent, 'fault.http.delay.fixed_delay_percent');
    assert.equal(config.runtime.abortStatus, 'fault.http.abort.http_status');
  });

  it('refuses malformed and unimplemented fields by name', () => {
    const { paths } = compile({
      delay: { percentage: { numerator: 1 } },
      abort: { http_status: 99, percentage: { numerator: 1, bogus: 1 } },
      response_rate_limit: { fixed_limit: { limit_kbps: 1 } },
      surprise: true,
    });
    assert.deepEqual(paths.sort(), [
      'f.abort.http_status',
      'f.abort.percentage.bogus',
      'f.delay',
      'f.response_rate_limit',
      'f.surprise',
    ]);
    assert.deepEqual(compile({ delay: { fixed_delay: 'soon' } }).paths, ['f.delay.fixed_delay']);
  });
});
