import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import {
  CODE_BITS,
  CODES,
  huffmanDecode,
  huffmanEncode,
  huffmanLength,
} from '../../../../src/dataplane/codec/h2/huffman.js';

const RUNS = Number(process.env.FUZZ_RUNS ?? 300);
const latin1 = fc.uint8Array({ maxLength: 200 }).map((bytes) => Buffer.from(bytes).toString('latin1'));

function encode(value: string): Buffer {
  const out = Buffer.alloc(huffmanLength(value));
  assert.equal(huffmanEncode(value, out, 0), out.length);
  return out;
}

test('the canonical code built from the lengths is RFC 7541 Appendix B', () => {
  // Rows of the appendix: symbol, code (right-aligned), length.
  const rows: Array<[number, number, number]> = [
    [0, 0x1ff8, 13],
    [10, 0x3ffffffc, 30],
    [32, 0x14, 6],
    [48, 0x0, 5],
    [97, 0x3, 5],
    [127, 0xffffffc, 28],
    [255, 0x3ffffee, 26],
    [256, 0x3fffffff, 30],
  ];
  for (const [symbol, code, bits] of rows) {
    assert.equal(CODES[symbol], code, `code of ${symbol}`);
    assert.equal(CODE_BITS[symbol], bits, `length of ${symbol}`);
  }
});

test('the examples of RFC 7541 C.4.1 encode and decode', () => {
  const coded = Buffer.from('f1e3c2e5f23a6ba0ab90f4ff', 'hex');
  assert.equal(huffmanDecode(coded, 0, coded.length), 'www.example.com');
  assert.deepEqual(encode('www.example.com'), coded);
  assert.deepEqual(encode('no-cache'), Buffer.from('a8eb10649cbf', 'hex'));
});

test('any Latin-1 string round-trips, in the length huffmanLength says', () => {
  fc.assert(
    fc.property(latin1, (value) => {
      const coded = encode(value);
      assert.equal(huffmanDecode(coded, 0, coded.length), value);
    }),
    { seed: 7, numRuns: RUNS },
  );
});

test('invalid strings are refused: EOS inside, padding of 8 bits or more, padding not all ones', () => {
  // 32 one bits: EOS (30 ones) is complete inside the string.
  assert.equal(huffmanDecode(Buffer.from([0xff, 0xff, 0xff, 0xff]), 0, 4), null);
  // 'a' is 00011: with three ones of padding it is valid, with a further 0xff (11 bits) not.
  assert.equal(huffmanDecode(Buffer.from([0x1f]), 0, 1), 'a');
  assert.equal(huffmanDecode(Buffer.from([0x1f, 0xff]), 0, 2), null);
  // Padding with zeros.
  assert.equal(huffmanDecode(Buffer.from([0x18]), 0, 1), null);
});

test('random bytes decode to a string or null, never throw', () => {
  fc.assert(
    fc.property(fc.uint8Array({ maxLength: 64 }), (bytes) => {
      const b = Buffer.from(bytes);
      const out = huffmanDecode(b, 0, b.length);
      if (out !== null) assert.deepEqual(encode(out).length <= b.length, true);
    }),
    { seed: 8, numRuns: RUNS },
  );
});
