/**
 * Root cause (issue 25): `max_request_headers_kb` and `max_headers_count` were read without
 * the reference's bounds, so `0` loaded and then refused every request (431), and
 * `max_request_headers_kb: 100000` let each client hold 100 MB of head; the reference refuses
 * both at load (1-8192 KiB, at least one header).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { compileHcm } from '../../../src/dataplane/http/hcm-config.js';
import { findingsOf } from '../../helpers/compile.js';

const hcm = (extra: Record<string, unknown>) =>
  findingsOf((report) => compileHcm({ stat_prefix: 'x', route_config: {}, ...extra }, 'hcm', report));

test('header limits out of the reference bounds are refused, naming the field', () => {
  assert.deepEqual(hcm({ max_request_headers_kb: 0 }), [
    'test: hcm.max_request_headers_kb: must be from 1 to 8192, got 0',
  ]);
  assert.deepEqual(hcm({ max_request_headers_kb: 8193 }), [
    'test: hcm.max_request_headers_kb: must be from 1 to 8192, got 8193',
  ]);
  assert.deepEqual(hcm({ common_http_protocol_options: { max_headers_count: 0 } }), [
    'test: hcm.common_http_protocol_options.max_headers_count: must be from 1 to 4294967295, got 0',
  ]);
});

test('limits within the bounds, and unset ones, load', () => {
  assert.deepEqual(
    hcm({ max_request_headers_kb: 96, common_http_protocol_options: { max_headers_count: 1 } }),
    [],
  );
  assert.deepEqual(hcm({}), []);
});

// Root cause (issue 25): server_name and via were written into every response head (and via into
// requests) as configured, so CR or LF in them injected header fields.
test('server_name and via with CR, LF or NUL are refused, naming the field', () => {
  assert.deepEqual(hcm({ server_name: 'a\r\nx: y', via: 'v\0' }), [
    'test: hcm.server_name: "a\\r\\nx: y" holds CR, LF or NUL, which a header value cannot',
    'test: hcm.via: "v\\u0000" holds CR, LF or NUL, which a header value cannot',
  ]);
  assert.deepEqual(hcm({ server_name: 'edge', via: '1.1 edge' }), []);
});
