/**
 * The HTTP inspector's reading of a plain-text connection's first bytes: the h2c preface, an
 * HTTP/1.1 or 1.0 request line, anything else as no protocol; a prefix of either waits for
 * more, up to 8 KiB. Malformed lines, and a fast-check run of random bytes: it never throws,
 * and a decision on some bytes stays the decision once more bytes follow.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { MAX_SNIFF, sniffHttp } from '../../../src/dataplane/listeners/http-sniff.js';

const RUNS = Number(process.env.FUZZ_RUNS ?? 200);
const of = (text: string) => sniffHttp(Buffer.from(text, 'latin1'));
const done = (...protocols: string[]) => ({ kind: 'done', protocols });

describe('sniffHttp', () => {
  it('names h2c, HTTP/1.1 and HTTP/1.0 from their first bytes', () => {
    assert.deepEqual(of('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\0\0\x12'), done('h2c'));
    assert.deepEqual(of('GET /a?b HTTP/1.1\r\nHost: x\r\n'), done('http/1.1'));
    assert.deepEqual(of('M-SEARCH * HTTP/1.0\r\n'), done('http/1.0'));
  });

  it('waits for a preface or a first line still coming', () => {
    assert.deepEqual(of('PRI * HTTP/2'), { kind: 'more' });
    assert.deepEqual(of('GET / HTTP/1.1'), { kind: 'more' });
    assert.deepEqual(of(''), { kind: 'more' });
  });

  it('finds no protocol in other text, a malformed line, another version, or 8 KiB without a line end', () => {
    for (const text of [
      'hello\r\n',
      'GET  / HTTP/1.1\r\n',
      'GET / HTTP/1.1 extra\r\n',
      'G(T / HTTP/1.1\r\n',
      'GET / HTTP/2.0\r\n',
      'GET / http/1.1\r\n',
      'PRI * HTTP/2.0\r\n\r\nXX\r\n\r\n',
      `GET /${'a'.repeat(MAX_SNIFF)}`,
    ])
      assert.deepEqual(of(text), done(), JSON.stringify(text.slice(0, 40)));
  });

  it('random bytes: never throws, and a decision holds once more bytes follow', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 64 }), fc.uint8Array({ maxLength: 64 }), (a, b) => {
        const first = sniffHttp(Buffer.from(a));
        if (first.kind === 'done') assert.deepEqual(sniffHttp(Buffer.concat([a, b])), first);
      }),
      { seed: 29, numRuns: RUNS },
    );
    fc.assert(
      fc.property(
        fc.constantFrom('GET', 'POST', 'OPTIONS'),
        fc.webPath(),
        fc.uint8Array({ maxLength: 32 }),
        (m, path, rest) => {
          const line = Buffer.from(`${m} /${path.replaceAll(' ', '')} HTTP/1.1\r\n`, 'latin1');
          assert.deepEqual(sniffHttp(Buffer.concat([line, rest])), done('http/1.1'));
        },
      ),
      { seed: 29, numRuns: RUNS },
    );
  });
});
