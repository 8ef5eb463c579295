/**
 * The API version a ConfigSource asks for, read by the config source's compile step and by the
 * config dump (which shows a v3 source's resources as v3) with the same pure functions.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { JsonObject } from '../../../events/index.js';
import {
  apiVersion,
  dynamicApiVersions,
  edsApiVersion,
  resourceApiVersion,
} from '../../../reducers/settings/config-source.js';
import { Report } from '../../../src/bootstrap/report.js';
import { compileConfigSource } from '../../../src/config/config-source.js';

test('V3 is V3; AUTO, V2, unset and anything else are V2, as the reference 1.15 reads them', () => {
  assert.equal(apiVersion('V3'), 'V3');
  for (const value of ['AUTO', 'V2', undefined, 3, 'v3', null]) assert.equal(apiVersion(value), 'V2');
});

test('a source, the bootstrap CDS and LDS sources and an EDS cluster, malformed ones V2', () => {
  assert.equal(resourceApiVersion({ ads: {}, resource_api_version: 'V3' }), 'V3');
  for (const bad of ['V3', ['V3'], null, undefined]) assert.equal(resourceApiVersion(bad), 'V2');
  assert.deepEqual(
    dynamicApiVersions({ dynamic_resources: { cds_config: { ads: {}, resource_api_version: 'V3' } } }),
    { cds: 'V3', lds: 'V2' },
  );
  assert.deepEqual(dynamicApiVersions(undefined), { cds: 'V2', lds: 'V2' });
  const eds = {
    name: 'e',
    type: 'EDS',
    eds_cluster_config: { eds_config: { ads: {}, resource_api_version: 'V3' } },
  };
  assert.equal(edsApiVersion(eds), 'V3');
  assert.equal(edsApiVersion({ name: 'e', eds_cluster_config: 'not a message' }), 'V2');
});

test("the compile step's resource version is the one the dump reads", () => {
  const sources: JsonObject[] = [{ ads: {}, resource_api_version: 'V3' }, { ads: {} }];
  for (const source of sources) {
    const spec = compileConfigSource(source, 'x', new Report('t'));
    assert.equal(spec?.resourceVersion, resourceApiVersion(source));
  }
});
