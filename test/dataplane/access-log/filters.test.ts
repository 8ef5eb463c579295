import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { JsonObject } from '../../../events/config.js';
import { Report } from '../../../src/bootstrap/report.js';
import {
  type AccessLogFilter,
  compileAccessLogFilter,
  type RuntimeLookup,
} from '../../../src/dataplane/access-log/filters.js';
import { FLAG, newStreamInfo, type StreamInfo } from '../../../src/dataplane/access-log/stream-info.js';
import type { HttpRequest } from '../../../src/dataplane/codec/request.js';

function compile(config: JsonObject): AccessLogFilter {
  const report = new Report('test');
  const filter = compileAccessLogFilter(config, 'filter', report);
  assert.deepEqual(report.errors, []);
  return filter;
}

function errorsOf(config: JsonObject): string {
  const report = new Report('test');
  compileAccessLogFilter(config, 'filter', report);
  return report.errors.join('\n');
}

function stream(fields: Partial<StreamInfo> = {}, headers: string[] = []): StreamInfo {
  const req: HttpRequest = {
    method: 'GET',
    path: '/',
    authority: 'h',
    scheme: 'http',
    headers,
    protocol: 'HTTP/1.1',
    remoteIp: '127.0.0.1',
    contentLength: 0,
    hasBody: false,
  };
  const info = newStreamInfo(req, '127.0.0.1:1', '127.0.0.1:2');
  info.startedAt = 0;
  info.endedAt = 50;
  info.responseCode = 200;
  return Object.assign(info, fields);
}

const noRuntime: RuntimeLookup = () => undefined;
const cmp = (op: string, value: number, key?: string) => ({
  comparison: { op, value: { default_value: value, ...(key ? { runtime_key: key } : {}) } },
});

describe('access log filters', () => {
  it('status_code_filter compares with EQ, GE, LE, and a runtime key overrides the default', () => {
    const ge = compile({ status_code_filter: cmp('GE', 500) });
    assert.equal(ge(stream({ responseCode: 503 }), noRuntime), true);
    assert.equal(ge(stream({ responseCode: 404 }), noRuntime), false);
    const eq = compile({ status_code_filter: cmp('EQ', 404) });
    assert.equal(eq(stream({ responseCode: 404 }), noRuntime), true);
    assert.equal(eq(stream({ responseCode: 200 }), noRuntime), false);
    const le = compile({ status_code_filter: cmp('LE', 299, 'log.max') });
    assert.equal(le(stream({ responseCode: 200 }), noRuntime), true);
    assert.equal(
      le(stream({ responseCode: 200 }), (k) => (k === 'log.max' ? '100' : undefined)),
      false,
    );
    assert.equal(
      le(stream({ responseCode: 200 }), () => 'not a number'),
      true,
    );
  });

  it('duration_filter compares the stream duration in ms', () => {
    const slow = compile({ duration_filter: cmp('GE', 100) });
    assert.equal(slow(stream({ endedAt: 150 }), noRuntime), true);
    assert.equal(slow(stream({ endedAt: 99.9 }), noRuntime), false);
  });

  it('not_health_check_filter drops requests the health check filter matched', () => {
    const f = compile({ not_health_check_filter: {} });
    assert.equal(f(stream({ healthCheck: true }), noRuntime), false);
    assert.equal(f(stream(), noRuntime), true);
  });

  it('runtime_filter samples by the runtime percentage, else percent_sampled', () => {
    const f = compile({ runtime_filter: { runtime_key: 'log.sample', percent_sampled: { numerator: 0 } } });
    const runs = (lookup: RuntimeLookup, independent: AccessLogFilter = f) => {
      let hits = 0;
      for (let i = 0; i < 2000; i++) if (independent(stream({}, ['x-request-id', `id-${i}`]), lookup)) hits++;
      return hits;
    };
    assert.equal(runs(noRuntime), 0);
    assert.equal(
      runs(() => '100'),
      2000,
    );
    const half = runs(() => '50');
    assert.ok(half > 800 && half < 1200, `${half} of 2000 sampled at 50%`);
    const tenK = compile({
      runtime_filter: {
        runtime_key: 'k',
        percent_sampled: { numerator: 2500, denominator: 'TEN_THOUSAND' },
        use_independent_randomness: true,
      },
    });
    const quarter = runs(noRuntime, tenK);
    assert.ok(quarter > 350 && quarter < 650, `${quarter} of 2000 sampled at 25%`);
  });

  it('runtime_filter without independent randomness decides alike for one x-request-id', () => {
    const f = compile({ runtime_filter: { runtime_key: 'k', percent_sampled: { numerator: 50 } } });
    for (let i = 0; i < 50; i++) {
      const s = stream({}, ['x-request-id', `req-${i}`]);
      assert.equal(f(s, noRuntime), f(s, noRuntime));
    }
  });

  it('response_flag_filter passes listed flags, or any flag when none is listed', () => {
    const some = compile({ response_flag_filter: { flags: ['UH', 'UF'] } });
    assert.equal(some(stream({ flags: FLAG.UF }), noRuntime), true);
    assert.equal(some(stream({ flags: FLAG.NR }), noRuntime), false);
    assert.equal(some(stream(), noRuntime), false);
    const any = compile({ response_flag_filter: {} });
    assert.equal(any(stream({ flags: FLAG.DC }), noRuntime), true);
    assert.equal(any(stream(), noRuntime), false);
    assert.match(
      errorsOf({ response_flag_filter: { flags: ['XX'] } }),
      /filter\.response_flag_filter\.flags\[0\]: 'XX' is not a response flag/,
    );
  });

  it('header_filter matches a request header', () => {
    const f = compile({ header_filter: { header: { name: 'x-debug', exact_match: 'on' } } });
    assert.equal(f(stream({}, ['x-debug', 'on']), noRuntime), true);
    assert.equal(f(stream({}, ['x-debug', 'off']), noRuntime), false);
  });

  it('and_filter and or_filter combine', () => {
    const and = compile({
      and_filter: { filters: [{ status_code_filter: cmp('GE', 400) }, { not_health_check_filter: {} }] },
    });
    assert.equal(and(stream({ responseCode: 500 }), noRuntime), true);
    assert.equal(and(stream({ responseCode: 500, healthCheck: true }), noRuntime), false);
    assert.equal(and(stream({ responseCode: 200 }), noRuntime), false);
    const or = compile({
      or_filter: { filters: [{ status_code_filter: cmp('GE', 500) }, { duration_filter: cmp('GE', 1000) }] },
    });
    assert.equal(or(stream({ responseCode: 503 }), noRuntime), true);
    assert.equal(or(stream({ endedAt: 2000 }), noRuntime), true);
    assert.equal(or(stream(), noRuntime), false);
  });

  it('reports what it cannot honour, by field path', () => {
    assert.match(errorsOf({}), /filter: set exactly one filter \(none set\)/);
    assert.match(errorsOf({ traceable_filter: {} }), /filter\.traceable_filter: tracing .* not implemented/);
    assert.match(
      errorsOf({ status_code_filter: cmp('GT', 1) }),
      /comparison\.op: 'GT' is not one of EQ, GE, LE/,
    );
    assert.match(
      errorsOf({ and_filter: { filters: [{ not_health_check_filter: {} }] } }),
      /and_filter\.filters: needs at least 2/,
    );
    assert.match(
      errorsOf({ runtime_filter: { percent_sampled: { numerator: 1 } } }),
      /runtime_filter\.runtime_key: required/,
    );
  });
});
