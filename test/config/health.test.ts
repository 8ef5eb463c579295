import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Report } from '../../src/bootstrap/report.js';
import { compileHealthCheck } from '../../src/config/health.js';

const check = (http: object) => ({
  timeout: '1s',
  interval: '1s',
  unhealthy_threshold: 1,
  healthy_threshold: 1,
  http_health_check: { path: '/h', ...http },
});

test('an HTTP check refuses the header names and values the router refuses, at their field paths', () => {
  const cases: Array<[object, RegExp]> = [
    [
      { request_headers_to_add: [{ header: { key: 'host', value: 'x' } }] },
      /hc\.http_health_check\.request_headers_to_add\[0\]\.header\.key: 'host' cannot be added/,
    ],
    [
      { request_headers_to_add: [{ header: { key: 'x-a', value: '%NOPE%' } }] },
      /hc\.http_health_check\.request_headers_to_add\[0\]\.header\.value: %NOPE%/,
    ],
    [
      { request_headers_to_remove: [':path'] },
      /hc\.http_health_check\.request_headers_to_remove\[0\]: ':path'/,
    ],
  ];
  for (const [http, expected] of cases) {
    const report = new Report('b.yaml');
    compileHealthCheck(check(http), 'hc', report);
    assert.match(report.errors.join('\n'), expected);
  }
});

// Root cause (issue 25): a check's path and host were written into its request line and Host
// as configured, so CR or LF in them injected fields, or a second request, into what every
// upstream host receives.
test("an HTTP check's path and host with CR, LF or NUL are errors at their fields", () => {
  for (const [http, expected] of [
    [{ path: '/h\r\nX-Injected: 1' }, /hc\.http_health_check\.path: .*CR, LF or NUL/],
    [{ host: 'a\r\n\r\nGET /admin HTTP/1.1' }, /hc\.http_health_check\.host: .*CR, LF or NUL/],
  ] as const) {
    const report = new Report('b.yaml');
    compileHealthCheck(check(http), 'hc', report);
    assert.match(report.errors.join('\n'), expected);
  }
});

test('an HTTP check without header fields compiles to no header mutation', () => {
  const report = new Report('b.yaml');
  const settings = compileHealthCheck(check({}), 'hc', report);
  assert.deepEqual(report.errors, []);
  assert.equal(settings.checker.kind === 'http' && settings.checker.headers, null);
});
