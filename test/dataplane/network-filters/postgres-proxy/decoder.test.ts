/**
 * The Postgres protocol decoder of postgres_proxy: what it counts of a session fed whole, byte
 * by byte, after an SSL request, and that no byte sequence makes it throw or buffer without bound.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import {
  PostgresDecoder,
  type PostgresStat,
} from '../../../../src/dataplane/network-filters/postgres-proxy/decoder.js';

function message(type: string, body: Buffer | string): Buffer {
  const b = typeof body === 'string' ? Buffer.from(body, 'latin1') : body;
  const head = Buffer.alloc(5);
  head.write(type, 0, 'latin1');
  head.writeUInt32BE(b.length + 4, 1);
  return Buffer.concat([head, b]);
}
function startup(code: number, params = ''): Buffer {
  const b = Buffer.alloc(8 + params.length);
  b.writeUInt32BE(b.length, 0);
  b.writeUInt32BE(code, 4);
  b.write(params, 8, 'latin1');
  return b;
}
const int32 = (n: number) => {
  const b = Buffer.alloc(4);
  b.writeUInt32BE(n);
  return b;
};
const complete = (tag: string) => message('C', `${tag}\0`);
const severity = (type: 'E' | 'N', level: string) => message(type, `S${level}\0V${level}\0Mboom\0\0`);

function decoder(): { d: PostgresDecoder; counts: Map<PostgresStat, number> } {
  const counts = new Map<PostgresStat, number>();
  const d = new PostgresDecoder((s) => counts.set(s, (counts.get(s) ?? 0) + 1));
  return { d, counts };
}

const FRONTEND = Buffer.concat([
  startup(196608, 'user\0me\0\0'),
  message('Q', 'BEGIN; INSERT INTO t VALUES (1); COMMIT;\0'),
  message('Q', 'SELECT 1\0'),
  message('X', ''),
]);
const BACKEND = Buffer.concat([
  message('R', int32(0)),
  message('Z', 'I'),
  complete('BEGIN'),
  complete('INSERT 0 1'),
  complete('COMMIT'),
  message('Z', 'I'),
  complete('SELECT 1'),
  severity('E', 'ERROR'),
  severity('N', 'WARNING'),
  message('Z', 'I'),
]);

const EXPECTED: Partial<Record<PostgresStat, number>> = {
  sessions: 1,
  sessions_unencrypted: 1,
  messages: 14,
  messages_frontend: 4,
  messages_backend: 10,
  statements: 2,
  statements_insert: 1,
  statements_select: 1,
  transactions: 2,
  transactions_commit: 2,
  errors: 1,
  errors_error: 1,
  notices: 1,
  notices_warning: 1,
};

describe('postgres_proxy decoder', () => {
  it('counts a session fed in whole messages', () => {
    const { d, counts } = decoder();
    d.client(FRONTEND);
    d.server(BACKEND);
    assert.deepEqual(Object.fromEntries(counts), EXPECTED);
  });

  it('counts the same fed one byte at a time', () => {
    const { d, counts } = decoder();
    for (let i = 0; i < FRONTEND.length; i++) d.client(FRONTEND.subarray(i, i + 1));
    for (let i = 0; i < BACKEND.length; i++) d.server(BACKEND.subarray(i, i + 1));
    assert.deepEqual(Object.fromEntries(counts), EXPECTED);
  });

  it('counts a ROLLBACK, and a statement inside BEGIN as no transaction of its own', () => {
    const { d, counts } = decoder();
    d.client(startup(196608));
    d.server(Buffer.concat([complete('BEGIN'), complete('DELETE 3'), complete('ROLLBACK')]));
    assert.equal(counts.get('transactions_rollback'), 1);
    assert.equal(counts.get('transactions'), 1);
    assert.equal(counts.get('transactions_commit'), undefined);
    assert.equal(counts.get('statements_delete'), 1);
  });

  it('reads on after a refused SSL request, and stops at an accepted one', () => {
    const refused = decoder();
    refused.d.client(startup(80877103));
    refused.d.server(Buffer.from('N'));
    refused.d.client(startup(196608));
    refused.d.server(message('R', int32(0)));
    assert.equal(refused.counts.get('sessions_unencrypted'), 1);

    const accepted = decoder();
    accepted.d.client(startup(80877103));
    accepted.d.server(Buffer.from('S'));
    // What follows is TLS: nothing more is read as Postgres.
    accepted.d.client(message('Q', 'SELECT 1\0'));
    accepted.d.server(message('R', int32(0)));
    assert.deepEqual(Object.fromEntries(accepted.counts), { sessions: 1, sessions_encrypted: 1 });
  });

  it('stops reading a stream with a length below 4 or a startup over 10000 bytes', () => {
    const short = decoder();
    short.d.client(startup(196608));
    short.d.server(Buffer.concat([message('Z', 'I'), Buffer.from([0x43, 0, 0, 0, 2]), complete('SELECT 1')]));
    assert.equal(short.counts.get('messages_backend'), 1);
    assert.equal(short.counts.get('statements'), undefined);

    const http = decoder();
    http.d.client(Buffer.from('GET / HTTP/1.1\r\nhost: x\r\n\r\n'));
    http.d.client(message('Q', 'SELECT 1\0'));
    assert.equal(http.counts.size, 0);
  });

  it('counts unknown message types and severities as unknown', () => {
    const { d, counts } = decoder();
    d.client(Buffer.concat([startup(196608), message('~', '')]));
    d.server(Buffer.concat([message('~', ''), severity('E', 'ODD'), severity('N', 'ODD')]));
    assert.equal(counts.get('messages_unknown'), 2);
    assert.equal(counts.get('errors_unknown'), 1);
    assert.equal(counts.get('notices_unknown'), 1);
  });

  it('never throws on any bytes either way, whatever their split', () => {
    const chunks = fc.array(fc.uint8Array({ maxLength: 64 }), { maxLength: 12 });
    fc.assert(
      fc.property(chunks, chunks, fc.boolean(), (front, back, startFirst) => {
        const { d } = decoder();
        if (startFirst) d.client(startup(196608));
        for (let i = 0; i < Math.max(front.length, back.length); i++) {
          const f = front[i];
          const b = back[i];
          if (f) d.client(Buffer.from(f));
          if (b) d.server(Buffer.from(b));
        }
      }),
      { seed: 5432, numRuns: Number(process.env.FUZZ_RUNS ?? 300) },
    );
  });
});
