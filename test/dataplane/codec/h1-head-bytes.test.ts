import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { requestHeadBytes, responseHeadBytes } from '../../../src/dataplane/codec/h1-head-bytes.js';

const RUNS = Number(process.env.FUZZ_RUNS ?? 300);
/** Latin-1 text: every byte value, as head values hold them (src/dataplane/codec/head-text.ts). */
const latin1 = fc.uint8Array({ maxLength: 60 }).map((b) => Buffer.from(b).toString('latin1'));
const fields = fc.array(fc.tuple(latin1, latin1), { maxLength: 12 }).map((pairs) => pairs.flat());

/** The head as the string concatenation it replaced wrote it. */
function concatenated(first: string, flat: readonly string[], last: string): Buffer {
  let head = first;
  for (let i = 0; i < flat.length; i += 2) head += `${flat[i]}: ${flat[i + 1]}\r\n`;
  return Buffer.from(head + last, 'latin1');
}

test('a request head is the bytes of its latin1 text', () => {
  const head = requestHeadBytes('GET', '/a?b=c', 'example.com', ['accept', '*/*', 'x-a', ''], '\r\n');
  assert.equal(
    head.toString('latin1'),
    'GET /a?b=c HTTP/1.1\r\nhost: example.com\r\naccept: */*\r\nx-a: \r\n\r\n',
  );
  fc.assert(
    fc.property(latin1, latin1, latin1, fields, (method, path, authority, flat) => {
      const framing = 'content-length: 5\r\n\r\n';
      assert.deepEqual(
        requestHeadBytes(method, path, authority, flat, framing),
        concatenated(`${method} ${path} HTTP/1.1\r\nhost: ${authority}\r\n`, flat, framing),
      );
    }),
    { seed: 11, numRuns: RUNS },
  );
});

test('a response head is the bytes of its latin1 text, with the body after it when given', () => {
  const head = responseHeadBytes('HTTP/1.1', 404, 'Not Found', ['server', 'envoy'], 2, '\r\n', null);
  assert.equal(
    head.toString('latin1'),
    'HTTP/1.1 404 Not Found\r\nserver: envoy\r\ncontent-length: 2\r\n\r\n',
  );
  fc.assert(
    fc.property(
      fc.integer({ min: 100, max: 999 }),
      latin1,
      fields,
      fc.option(fc.uint8Array({ maxLength: 100 })),
      fc.integer({ min: -1, max: 2 ** 31 - 1 }),
      (status, reason, flat, body, length) => {
        const bytes = body === null ? null : Buffer.from(body);
        const framing = length < 0 ? 'transfer-encoding: chunked\r\n\r\n' : '\r\n';
        const lengthField = length < 0 ? '' : `content-length: ${length}\r\n`;
        const expected = concatenated(`HTTP/1.0 ${status} ${reason}\r\n`, flat, lengthField + framing);
        assert.deepEqual(
          responseHeadBytes('HTTP/1.0', status, reason, flat, length, framing, bytes),
          bytes === null ? expected : Buffer.concat([expected, bytes]),
        );
      },
    ),
    { seed: 12, numRuns: RUNS },
  );
});
