/**
 * Request smuggling fuzz (issue 25): mutated HTTP/1 requests (tokens such as a second
 * Content-Length, `Transfer-Encoding: chunked`, bare CR or LF, NUL, 8-bit bytes, inserted,
 * deleted or replaced anywhere) go to the proxy over a real listener, in front of a strict
 * origin. Whatever the bytes, every request that reaches the origin is well formed (a token
 * method, a `/` target, token field names, one Host, one framing), no more requests arrive
 * than the client was answered, and every connection gets an answer or a close. Fixed seed;
 * `FUZZ_RUNS` sets the number of requests (`npm run fuzz` sends more).
 */
import assert from 'node:assert/strict';
import * as net from 'node:net';
import { after, before, test } from 'node:test';
import fc from 'fast-check';
import { hcmConfig, startProxy, type TestProxy } from '../../helpers/http-dataplane.js';

const RUNS = Number(process.env.FUZZ_RUNS ?? 60);

const SEEDS = [
  'GET /a HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n',
  'POST /p HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello',
  'POST /p HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n5\r\nhello\r\n0\r\n\r\n',
  'GET http://h/a HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n',
  'POST /p HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\n\r\nabcdGET /b HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n',
];
const TOKENS = [
  '\r\n',
  '\n',
  '\r',
  ' ',
  '\t',
  ':',
  '\0',
  '\x7f',
  '\xff',
  ',',
  '#',
  'Content-Length: 3\r\n',
  'Transfer-Encoding: chunked\r\n',
  'Transfer-Encoding: chunked, identity\r\n',
  '0\r\n\r\n',
  'ffffffffffffffffff\r\n',
  'Host: y\r\n',
  'GET /smuggled HTTP/1.1\r\nHost: x\r\n\r\n',
  'HTTP/1.0',
  'Expect: 100-continue\r\n',
  'Connection: keep-alive\r\n',
];

/** One edit of a request: insert a token or a byte, delete a few bytes, or replace one. */
const edit = fc.oneof(
  fc.record({ at: fc.nat(), insert: fc.constantFrom(...TOKENS) }),
  fc.record({ at: fc.nat(), insert: fc.integer({ min: 0, max: 255 }).map((c) => String.fromCharCode(c)) }),
  fc.record({ at: fc.nat(), remove: fc.integer({ min: 1, max: 3 }) }),
);

function mutate(seed: string, edits: Array<{ at: number; insert?: string; remove?: number }>): string {
  let out = seed;
  for (const e of edits) {
    const at = e.at % (out.length + 1);
    out =
      e.insert !== undefined
        ? out.slice(0, at) + e.insert + out.slice(at)
        : out.slice(0, at) + out.slice(at + (e.remove ?? 1));
  }
  return out;
}

const TOKEN = "[!#$%&'*+\\-.^_`|~0-9A-Za-z]+";
const REQUEST_LINE = new RegExp(`^${TOKEN} /[\\x21-\\x7e]* HTTP/1\\.1$`);
const FIELD = new RegExp(`^(${TOKEN.toLowerCase()}): ?([\\t\\x20-\\x7e\\x80-\\xff]*)$`);

let arrived = 0;
const malformed: string[] = [];
let origin: net.Server;
let proxy: TestProxy;

/** Checks one request head as the origin got it (findings go to `malformed`); returns its body framing. */
function checkHead(head: string): { length: number; chunked: boolean } {
  const [line, ...fields] = head.split('\r\n');
  if (!REQUEST_LINE.test(line ?? '')) malformed.push(`request line ${JSON.stringify(line)}`);
  let length = -1;
  let chunked = false;
  let hosts = 0;
  for (const f of fields) {
    const m = FIELD.exec(f);
    if (!m) {
      malformed.push(`field ${JSON.stringify(f)}`);
      continue;
    }
    if (m[1] === 'content-length') {
      if (length >= 0) malformed.push('two Content-Length fields');
      length = Number(m[2]);
    }
    if (m[1] === 'transfer-encoding') chunked = true;
    if (m[1] === 'host') hosts += 1;
  }
  if (hosts !== 1) malformed.push(`${hosts} Host fields`);
  if (chunked && length >= 0) malformed.push('Content-Length with Transfer-Encoding');
  return { length: Math.max(length, 0), chunked };
}

/** The end of a complete chunked body in `bytes`, or -1. */
function chunkedEnd(bytes: Buffer): number {
  let at = 0;
  for (;;) {
    const nl = bytes.indexOf('\r\n', at);
    if (nl < 0) return -1;
    const size = Number.parseInt(bytes.toString('latin1', at, nl), 16);
    if (Number.isNaN(size)) {
      malformed.push('a chunk size the origin cannot read');
      return bytes.length;
    }
    if (size === 0) {
      const end = bytes.indexOf('\r\n\r\n', nl);
      return end < 0 ? -1 : end + 4;
    }
    if (bytes.length < nl + 2 + size + 2) return -1;
    at = nl + 2 + size + 2;
  }
}

before(async () => {
  origin = net.createServer((socket) => {
    let buffered = Buffer.alloc(0);
    socket.on('error', () => {});
    socket.on('data', (chunk: Buffer) => {
      buffered = Buffer.concat([buffered, chunk]);
      for (;;) {
        const end = buffered.indexOf('\r\n\r\n');
        if (end < 0) return;
        const { length, chunked } = checkHead(buffered.toString('latin1', 0, end));
        const body = buffered.subarray(end + 4);
        const used = chunked ? chunkedEnd(body) : body.length >= length ? length : -1;
        if (used < 0) return;
        buffered = body.subarray(used);
        arrived += 1;
        socket.write('HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok');
      }
    });
  });
  await new Promise<void>((resolve) => origin.listen(0, '127.0.0.1', resolve));
  const port = (origin.address() as net.AddressInfo).port;
  proxy = await startProxy(hcmConfig('origin'), [
    { raw: { name: 'origin' }, addresses: [`127.0.0.1:${port}`] },
  ]);
});

after(async () => {
  await proxy.close();
  origin.close();
});

/** Sends the bytes; resolves with what came back once the proxy closes, or after `ms` of waiting. */
function exchange(bytes: string, ms: number): Promise<{ out: string; closed: boolean }> {
  return new Promise((resolve) => {
    const socket = net.connect(proxy.port, '127.0.0.1');
    let out = '';
    let closed = false;
    const timer = setTimeout(() => socket.destroy(), ms);
    socket.on('data', (d: Buffer) => (out += d.toString('latin1')));
    socket.on('end', () => (closed = true));
    socket.on('error', () => {});
    socket.on('close', () => {
      clearTimeout(timer);
      resolve({ out, closed });
    });
    socket.write(Buffer.from(bytes, 'latin1'));
  });
}

test('no mutated request reaches the origin malformed, and none more than were answered', async () => {
  await fc.assert(
    fc.asyncProperty(
      fc.constantFrom(...SEEDS),
      fc.array(edit, { minLength: 1, maxLength: 4 }),
      async (seed, edits) => {
        const bytes = mutate(seed, edits);
        const before = arrived;
        const { out } = await exchange(bytes, 400);
        const answered = (out.match(/HTTP\/1\.[01] \d{3} /g) ?? []).length;
        assert.deepEqual(malformed.splice(0), [], JSON.stringify(bytes));
        assert.ok(
          arrived - before <= answered,
          `${arrived - before} reached the origin, ${answered} answered: ${JSON.stringify(bytes)}`,
        );
      },
    ),
    { seed: 2511, numRuns: RUNS },
  );
  // The proxy still serves.
  const { out } = await exchange(SEEDS[0] as string, 2000);
  assert.match(out, /^HTTP\/1\.1 200 /);
});
