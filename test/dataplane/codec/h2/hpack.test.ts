import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { HpackDecoder, HpackEncoder, HpackError } from '../../../../src/dataplane/codec/h2/hpack.js';

const RUNS = Number(process.env.FUZZ_RUNS ?? 200);

function decode(decoder: HpackDecoder, hex: string): string[] {
  const block = Buffer.from(hex.replace(/\s/g, ''), 'hex');
  const out: string[] = [];
  decoder.decode(block, 0, block.length, out, Infinity);
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
          decoder.decode(out, 0, end, decoded, Infinity);
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
          decoder.decode(b, 0, b.length, [], Infinity);
        } catch (err) {
          assert.ok(err instanceof HpackError, String(err));
        }
      }
    }),
    { seed: 22, numRuns: RUNS },
  );
});

// Root cause of the HPACK bomb (session.test.ts has it on a socket): every field was appended
// before the list size was judged, so one byte per 4 KB field made a gigabyte from 256 KiB.
test('fields past the list limit are counted, not kept, and the table stays in step', () => {
  const d = new HpackDecoder(4096);
  // A literal `x: aaaa` added to the table (0x40), then index 62 (0xbe) 10,000 times.
  const block = Buffer.concat([
    Buffer.from('400178', 'hex'),
    Buffer.from([0x04]),
    Buffer.from('aaaa'),
    Buffer.alloc(10_000, 0xbe),
  ]);
  const out: string[] = [];
  d.decode(block, 0, block.length, out, 100);
  assert.equal(out.length, 2 * 2, 'two fields of 37 bytes fit in 100');
  assert.equal(d.listSize, 10_001 * 37);
  assert.deepEqual(decode(d, 'be'), ['x', 'aaaa']);
});
