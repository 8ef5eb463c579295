/** The RouteConfiguration's compile step: discovery's table is the one the HTTP connection managers route with. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { JsonObject } from '../../events/index.js';
import { initialState, type State } from '../../reducers/index.js';
import {
  compiledRouteConfiguration,
  compileRouteConfiguration,
} from '../../src/config/route-configuration.js';
import { discoveredRoutes } from '../../src/dataplane/router/discovered.js';
import { decodeResources } from '../../src/edges/xds/resources.js';

const RDS_TYPE = 'type.googleapis.com/envoy.api.v2.RouteConfiguration';

const routes = (name: string): JsonObject => ({
  name,
  virtual_hosts: [
    {
      name: 'all',
      domains: ['*'],
      routes: [{ match: { safe_regex: { google_re2: {}, regex: '/a.*' } }, route: { cluster: 'web' } }],
    },
  ],
});

function withRoutes(config: JsonObject & { name: string }): State {
  const entry = { name: config.name, config, versionInfo: '1', lastUpdated: 0 };
  return { ...initialState, discovery: { ...initialState.discovery, routes: { [config.name]: entry } } };
}

describe('compileRouteConfiguration', () => {
  it('the table route discovery compiled is the one served, not compiled again', () => {
    const out = decodeResources('rds', [{ '@type': RDS_TYPE, ...routes('front') }], {
      allowUnknown: false,
      disabled: new Set(),
    });
    assert.deepEqual(out.rejected, []);
    const config = out.resources[0]?.config as JsonObject & { name: string };
    const table = compiledRouteConfiguration(config);
    assert.equal(discoveredRoutes(withRoutes(config), 'front'), table);
    assert.equal(table.any?.routes.length, 1);
  });

  it('compiles a copy it never saw once, and names what it refuses by path', () => {
    const copy = structuredClone(routes('copy'));
    assert.equal(compiledRouteConfiguration(copy), compiledRouteConfiguration(copy));
    const { findings } = compileRouteConfiguration(
      { name: 'bad', virtual_hosts: [{ name: 'v' }] },
      'route_config',
    );
    assert.match(
      findings.errors.join('\n'),
      /route_config\.virtual_hosts\[0\]\.domains: needs at least one domain/,
    );
  });
});
