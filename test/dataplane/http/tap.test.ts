import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { JsonObject } from '../../../events/index.js';
import { Report } from '../../../src/bootstrap/report.js';
import { compileTapRequest } from '../../../src/dataplane/http/tap.js';
import { compileTestHcm } from '../../helpers/compile.js';

const hcm = (tap: Record<string, unknown>) => ({
  stat_prefix: 'in',
  route_config: { virtual_hosts: [{ name: 'v', domains: ['*'], routes: [] }] },
  http_filters: [tap, { name: 'envoy.router' }],
});
const ADMIN = { common_config: { admin_config: { config_id: 'id1' } } };
const TAP = 'envoy.config.filter.http.tap.v2alpha.Tap';
const TAP_TYPE = `type.googleapis.com/${TAP}`;

describe('tap filter compile step', () => {
  it('reads the config id under every spelling and the v3 @type', () => {
    for (const tap of [
      { name: 'envoy.filters.http.tap', typed_config: { '@type': TAP_TYPE, ...ADMIN } },
      { name: 'proxy.filters.http.tap', config: ADMIN },
      {
        name: 'x',
        typed_config: { '@type': 'type.googleapis.com/proxy.extensions.filters.http.tap.v3.Tap', ...ADMIN },
      },
    ])
      assert.deepEqual(
        compileTestHcm(hcm(tap)).filters.stream,
        [{ configType: TAP, config: 'id1', name: tap.name }],
        JSON.stringify(tap),
      );
    assert.deepEqual(
      compileTestHcm(hcm({ name: 'envoy.filters.http.health_check', config: {} })).filters.stream,
      [],
    );
  });

  it('refuses static_config by name and wants a config id', () => {
    const staticTap = { name: 'envoy.filters.http.tap', config: { common_config: { static_config: {} } } };
    assert.throws(() => compileTestHcm(hcm(staticTap)), /static_config \(file sinks\) is not supported/);
    const noId = { name: 'envoy.filters.http.tap', config: { common_config: { admin_config: {} } } };
    assert.throws(
      () => compileTestHcm(hcm(noId)),
      /admin_config\.config_id: the tap filter needs a config_id/,
    );
  });
});

describe('TapRequest', () => {
  const check = (body: JsonObject) => {
    const report = new Report('/tap');
    return { compiled: compileTapRequest(body, report), errors: report.errors.join('\n') };
  };
  const sinks = [{ streaming_admin: {} }];

  it('defaults both body limits to 1024 bytes and bodies to base64', () => {
    const { compiled } = check({
      config_id: 'a',
      tap_config: { match_config: { any_match: true }, output_config: { sinks } },
    });
    assert.equal(compiled?.session.maxRxBytes, 1024);
    assert.equal(compiled?.session.maxTxBytes, 1024);
    assert.equal(compiled?.session.bodyAsString, false);
  });

  it('refuses what it does not do, naming the field', () => {
    const cases: Array<[JsonObject, RegExp]> = [
      [{ config_id: 'a', tap_config: { output_config: { sinks } } }, /tap_config\.match_config: required/],
      [
        {
          config_id: 'a',
          tap_config: {
            match_config: { any_match: true, or_match: { rules: [] } },
            output_config: { sinks },
          },
        },
        /exactly one rule/,
      ],
      [
        {
          config_id: 'a',
          tap_config: { match_config: { http_request_trailers_match: {} }, output_config: { sinks } },
        },
        /trailers are not matched/,
      ],
      [
        { config_id: 'a', tap_config: { match_config: { any_match: true }, output_config: { sinks: [] } } },
        /exactly one sink/,
      ],
      [
        {
          config_id: 'a',
          tap_config: {
            match_config: { any_match: true },
            output_config: { sinks: [{ format: 'PROTO_BINARY', streaming_admin: {} }] },
          },
        },
        /format must be JSON_BODY_AS_BYTES or JSON_BODY_AS_STRING/,
      ],
      [{ tap_config: {} }, /config_id: a TapRequest needs a config_id/],
    ];
    for (const [body, error] of cases) {
      const { compiled, errors } = check(body);
      assert.equal(compiled, null, JSON.stringify(body));
      assert.match(errors, error);
    }
  });

  it('matches request and response headers with and, or and not', () => {
    const { compiled } = check({
      config_id: 'a',
      tap_config: {
        match_config: {
          or_match: {
            rules: [
              { http_request_headers_match: { headers: [{ name: ':path', prefix_match: '/api' }] } },
              {
                not_match: {
                  http_response_headers_match: { headers: [{ name: 'x-ok', present_match: true }] },
                },
              },
            ],
          },
        },
        output_config: { sinks },
      },
    });
    const match = compiled!.session.match;
    const message = (path: string, headers: string[]) => ({
      method: 'GET',
      path,
      authority: 'h',
      scheme: 'http',
      headers,
      protocol: 'HTTP/1.1' as const,
      remoteIp: '127.0.0.1',
      contentLength: 0,
      hasBody: false,
    });
    assert.equal(match(message('/api/x', []), message('', ['x-ok', '1'])), true);
    assert.equal(match(message('/other', []), message('', ['x-ok', '1'])), false);
    assert.equal(match(message('/other', []), message('', [])), true);
  });
});
