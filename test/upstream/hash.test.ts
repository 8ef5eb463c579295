import assert from 'node:assert/strict';
import { before, test } from 'node:test';
import { mod64, murmurHash2_64, prepareHashing, splitHash, xxHash64 } from '../../src/upstream/hash.js';

before(prepareHashing);

// Reference vectors: xxHash64 seed 0, and libstdc++ std::_Hash_bytes (MurmurHash64A) seed 0xc70f6907.
const VECTORS: Array<[string, string, string]> = [
  ['', 'ef46db3751d8e999', '553e93901e462a6e'],
  ['a', 'd24ec4f1a98c6e5b', '454ddee488c1ed6b'],
  ['abc', '44bc2cf5ad770999', '32d82bf8ed3dba39'],
  ['127.0.0.1:8080', 'c65e86b000fb3cbf', 'a8c1f3a430341e20'],
  ['10.0.0.1:80_0', '75041381e7371a08', 'bd8f6461ecffb28c'],
];

test('xxHash64 matches the reference vectors', () => {
  for (const [input, xx] of VECTORS) assert.equal(xxHash64(input).toString(16).padStart(16, '0'), xx, input);
});

test('murmurHash2_64 matches std::_Hash_bytes', () => {
  for (const [input, , murmur] of VECTORS)
    assert.equal(murmurHash2_64(input).toString(16).padStart(16, '0'), murmur, input);
  assert.equal(murmurHash2_64('hello world!!').toString(16), '893eb79cacce78e4');
});

test('mod64 agrees with BigInt arithmetic', () => {
  for (const [input] of VECTORS) {
    const h = xxHash64(input);
    const [hi, lo] = splitHash(h);
    for (const m of [100, 65537, 7]) assert.equal(mod64(hi, lo, m), Number(h % BigInt(m)));
  }
});
