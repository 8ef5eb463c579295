import assert from 'node:assert/strict';
import { it } from 'node:test';
import type { JsonObject } from '../../../events/index.js';
import { applyMask } from '../../../views/config-dump/mask.js';

it('keeps only the masked paths, through lists, and always @type', () => {
  const dump: JsonObject = {
    '@type': 'T',
    version_info: 'v1',
    static_clusters: [
      { cluster: { '@type': 'C', name: 'a', type: 'STATIC' }, last_updated: 't' },
      { cluster: { '@type': 'C', name: 'b' }, last_updated: 't' },
    ],
  };
  assert.deepEqual(applyMask(dump, ['static_clusters.cluster.name']), {
    '@type': 'T',
    static_clusters: [{ cluster: { '@type': 'C', name: 'a' } }, { cluster: { '@type': 'C', name: 'b' } }],
  });
  assert.deepEqual(applyMask(dump, ['version_info', 'missing.path']), { '@type': 'T', version_info: 'v1' });
});
