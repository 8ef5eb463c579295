/** The xDS `version` gauges' value: the reference's xxHash64 of version_info, kept to 53 bits. */
import assert from 'node:assert/strict';
import { before, it } from 'node:test';
import { prepareHashing } from '../../../src/upstream/hash.js';
import { versionHash } from '../../../src/edges/xds/version-hash.js';

before(() => prepareHashing());

it('is the low 53 bits of xxHash64 (seed 0) of the version string', () => {
  // xxHash64 of the empty input with seed 0 is 0xef46db3751d8e999 (the algorithm's published vector).
  assert.equal(versionHash(''), Number(0xef46db3751d8e999n & ((1n << 53n) - 1n)));
  assert.ok(Number.isSafeInteger(versionHash('2020-06-01T12:00:00Z')));
  assert.notEqual(versionHash('v1'), versionHash('v2'));
});
