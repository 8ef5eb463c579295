import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { HpackDecoder, HpackEncoder, HpackError } from '../../../../src/dataplane/codec/h2/hpack.js';

const RUNS = Number(process.env.FUZZ_RUNS ?? 200);

function decode(decoder: HpackDecoder, hex: string): string[] {
  const block = Buffer.from(hex.replace(/\s/g, ''), 'hex');
  const out: string[] = [];
  decoder.decode(block, 0, block.length, out);
  return out;
}

test('RFC 7541 C.4: three requests with Huffman coding share one dynamic table', () => {
  const d = new HpackDecoder(4096);
  const first = [':method', 'GET', ':scheme', 'http', ':path', '/', ':authority', 'www.example.com'];
  assert.deepEqual(decode(d, '828684418cf1e3c2e5f23a6ba0ab90f4ff'), first);
  // 0xbe: dynamic index 62, the :authority the first block added.
  assert.deepEqual(decode(d, '828684be5886a8eb10649cbf'), [...first, 'cache-control', 'no-cache']);
  assert.deepEqual(decode(d, '828785bf408825a849e95ba97d7f8925a849e95bb8e8b4bf'), [
    ':method',
    'GET',
    ':scheme',
    'https',
    ':path',
    '/index.html',
    ':authority',
    'www.example.com',
    'custom-key',
    'custom-value',
  ]);
});

test('malformed blocks are a compression error', () => {
  const bad = [
    '80', // indexed field 0
    'ff00', // an index beyond both tables
    '7f', // an integer cut short
    '7fffffffff0f', // an integer past 2^31
    '82 3f e11f', // a table size update after a field
    '3fe21f', // a table size update over the limit (4096)
    '0003616263', // literal name, value length 3 with no bytes
    '00 83 ffffff 00', // a Huffman name holding EOS
  ];
  for (const hex of bad) assert.throws(() => decode(new HpackDecoder(4096), hex), HpackError, hex);
});

const name = fc.constantFrom(
  'server',
  'content-type',
  'x-a',
  'x-b',
  'set-cookie',
  'date',
  'cache-control',
  'vary',
);
const value = fc.uint8Array({ maxLength: 40 }).map((b) => Buffer.from(b).toString('latin1'));
const block = fc.array(fc.tuple(name, value), { maxLength: 12 }).map((pairs) => pairs.flat());
const status = fc.constantFrom('200', '204', '404', '503', '418');

test('what the encoder writes the decoder reads back, block after block, as the peer table limit changes', () => {
  fc.assert(
    fc.property(
      fc.array(fc.tuple(status, block, fc.option(fc.constantFrom(0, 64, 256, 4096, 65536))), {
        maxLength: 20,
      }),
      (blocks) => {
        const encoder = new HpackEncoder();
        const decoder = new HpackDecoder(4096);
        for (const [code, headers, limit] of blocks) {
          if (limit !== null) encoder.setLimit(limit);
          const out = Buffer.alloc(HpackEncoder.bound(code, headers));
          const end = encoder.encode(code, headers, out, 0);
          const decoded: string[] = [];
          decoder.decode(out, 0, end, decoded);
          assert.deepEqual(decoded, [':status', code, ...headers]);
        }
      },
    ),
    { seed: 21, numRuns: RUNS },
  );
});

test('random blocks decode or fail with HpackError, never anything else', () => {
  fc.assert(
    fc.property(fc.array(fc.uint8Array({ maxLength: 48 }), { maxLength: 5 }), (blocks) => {
      const decoder = new HpackDecoder(4096);
      for (const bytes of blocks) {
        const b = Buffer.from(bytes);
        try {
          decoder.decode(b, 0, b.length, []);
        } catch (err) {
          assert.ok(err instanceof HpackError, String(err));
        }
      }
    }),
    { seed: 22, numRuns: RUNS },
  );
});
