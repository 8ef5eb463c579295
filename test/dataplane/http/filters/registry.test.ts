import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { EXTENSIONS } from '../../../../src/bootstrap/catalog.js';
import { Report } from '../../../../src/bootstrap/report.js';
import { HTTP_FILTER_FACTORIES, httpFilterFactory } from '../../../../src/dataplane/http/filters/registry.js';
import { compileHttpFilters } from '../../../../src/dataplane/http/filters.js';

describe('HTTP filter factory registry', () => {
  it('has one factory for every HTTP filter extension, and none for anything else', () => {
    const extensions = EXTENSIONS.filter((e) => e.category === 'envoy.filters.http').map((e) => e.configType);
    assert.deepEqual(HTTP_FILTER_FACTORIES.map((f) => f.configType).sort(), [...new Set(extensions)].sort());
    for (const type of extensions) assert.ok(httpFilterFactory(type), type);
  });

  it('compiles a chain through the factories, each into its slot, refusing unknown fields by name', () => {
    const report = new Report('t');
    const at = (type: string, fields: object = {}) => ({
      name: type,
      typed_config: { '@type': `type.googleapis.com/${type}`, ...fields },
    });
    const chain = compileHttpFilters(
      [
        at('envoy.config.filter.http.health_check.v2.HealthCheck', { pass_through_mode: true }),
        at('envoy.config.filter.http.cors.v2.Cors'),
        at('envoy.config.filter.http.grpc_web.v2.GrpcWeb', { bogus: 1 }),
        at('envoy.config.filter.http.router.v2.Router', { suppress_envoy_headers: true }),
      ],
      'hcm.http_filters',
      report,
    );
    assert.equal(chain.healthCheck?.passThrough, true);
    assert.equal(chain.router.suppressEnvoyHeaders, true);
    assert.deepEqual(chain.stream, [
      {
        configType: 'envoy.config.filter.http.cors.v2.Cors',
        config: null,
        name: 'envoy.config.filter.http.cors.v2.Cors',
      },
      {
        configType: 'envoy.config.filter.http.grpc_web.v2.GrpcWeb',
        config: null,
        name: 'envoy.config.filter.http.grpc_web.v2.GrpcWeb',
      },
    ]);
    assert.deepEqual(
      report.problems.map((e) => e.path),
      ['hcm.http_filters[2].typed_config.bogus'],
    );
  });

  it('refuses a config message no factory has, naming the filter', () => {
    const report = new Report('t');
    compileHttpFilters(
      [{ name: 'envoy.filters.http.nothing', typed_config: { '@type': 'type.googleapis.com/x.Nothing' } }],
      'f',
      report,
    );
    assert.ok(report.problems.some((e) => e.path === 'f[0].name' && /not an HTTP filter/.test(e.message)));
  });
});
