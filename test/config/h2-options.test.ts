/** `connection_keepalive` of `http2_protocol_options`: what it compiles to, and each bad setting named. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { JsonObject } from '../../events/index.js';
import { Report } from '../../src/bootstrap/report.js';
import { compileHttp2Options } from '../../src/config/h2-options.js';

const compile = (keepalive: JsonObject) => {
  const report = new Report('test');
  const options = compileHttp2Options({ connection_keepalive: keepalive }, 'h2', report);
  return { keepalive: options.keepalive, errors: report.errors };
};

describe('connection_keepalive', () => {
  it("compiles Envoy Gateway's setting, the reference's 15 % jitter by default", () => {
    assert.deepEqual(compile({ interval: '30s', timeout: '5s' }), {
      keepalive: { intervalMs: 30_000, timeoutMs: 5000, jitter: 0.15, idleIntervalMs: 0 },
      errors: [],
    });
    assert.deepEqual(
      compile({ timeout: '1s', interval_jitter: { value: 0 }, connection_idle_interval: '0.5s' }).keepalive,
      { intervalMs: 0, timeoutMs: 1000, jitter: 0, idleIntervalMs: 500 },
    );
  });

  it('refuses a missing timeout, a duration under 1 ms, a jitter over 100 % and an unknown field, by name', () => {
    const cases: Array<[JsonObject, RegExp]> = [
      [{ interval: '1s' }, /h2\.connection_keepalive\.timeout: required field missing/],
      [{ timeout: '0s' }, /h2\.connection_keepalive\.timeout: must be at least 1ms/],
      [{ timeout: '1s', interval: '0.0001s' }, /h2\.connection_keepalive\.interval: must be at least 1ms/],
      [{ timeout: '1s', interval_jitter: { value: 150 } }, /interval_jitter\.value: must be from 0 to 100/],
      [{ timeout: '1s', interval_jitter: { value: -1 } }, /interval_jitter\.value: must be from 0 to 100/],
      [{ timeout: '1s', connection_idle_interval: 'soon' }, /connection_idle_interval: must be at least 1ms/],
      [{ timeout: '1s', keepalive_pings: true }, /keepalive_pings/],
    ];
    for (const [keepalive, finding] of cases) {
      const { errors } = compile(keepalive);
      assert.ok(
        errors.some((e) => finding.test(e)),
        `${JSON.stringify(keepalive)}: ${errors.join('; ')}`,
      );
    }
  });
});
