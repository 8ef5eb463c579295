/**
 * The MySQL protocol decoder of mysql_proxy: what it counts of a login that passes, one that
 * fails, an auth switch, an SSL upgrade and packets out of sequence, fed whole and byte by
 * byte, and that no byte sequence makes it throw.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import {
  MysqlDecoder,
  type MysqlStat,
} from '../../../../src/dataplane/network-filters/mysql-proxy/decoder.js';

function packet(seq: number, payload: number[] | Buffer): Buffer {
  const body = Buffer.from(payload);
  const head = Buffer.from([body.length & 0xff, (body.length >> 8) & 0xff, body.length >> 16, seq]);
  return Buffer.concat([head, body]);
}
const GREETING = packet(
  0,
  Buffer.concat([Buffer.from([10]), Buffer.from('10.11.0-MariaDB\0'), Buffer.alloc(40)]),
);
/** A handshake response: capabilities (PROTOCOL_41, and SSL if asked), then the rest of `length`. */
function response(seq: number, ssl: boolean, length: number): Buffer {
  const caps = 0x200 | 0x8000 | (ssl ? 0x800 : 0);
  const body = Buffer.alloc(length);
  body.writeUInt32LE(caps, 0);
  return packet(seq, body);
}
const OK = (seq: number) => packet(seq, [0, 0, 0, 2, 0, 0, 0]);
const ERR = (seq: number) => packet(seq, [0xff, 0x15, 0x04, ...Buffer.from('#28000denied')]);

function run(client: Buffer[], server: Buffer[], oneByte = false): Record<string, number> {
  const counts = new Map<MysqlStat, number>();
  const d = new MysqlDecoder((s) => counts.set(s, (counts.get(s) ?? 0) + 1));
  // The exchange alternates: server greeting, client response, server answer, ...
  const turns: Array<[boolean, Buffer]> = [];
  for (let i = 0; i < Math.max(client.length, server.length); i++) {
    const s = server[i];
    const c = client[i];
    if (s) turns.push([false, s]);
    if (c) turns.push([true, c]);
  }
  for (const [fromClient, bytes] of turns) {
    const chunks = oneByte ? [...bytes].map((b) => Buffer.from([b])) : [bytes];
    for (const chunk of chunks) fromClient ? d.client(chunk) : d.server(chunk);
  }
  return Object.fromEntries(counts);
}

const QUERY = packet(0, [0x03, ...Buffer.from('SELECT 1')]);
const RESULT = [packet(1, [1]), packet(2, [3, 0x64, 0x65, 0x66]), packet(3, [0xfe, 0, 0, 2, 0])];

describe('mysql_proxy decoder', () => {
  it('counts a login that passes and a query answered in sequence, whole or byte by byte', () => {
    for (const oneByte of [false, true])
      assert.deepEqual(
        run([response(1, false, 60), QUERY], [GREETING, OK(2), Buffer.concat(RESULT)], oneByte),
        { sessions: 1, login_attempts: 1 },
      );
  });

  it('counts a failed login and an auth switch', () => {
    assert.deepEqual(run([response(1, false, 60)], [GREETING, ERR(2)]), {
      sessions: 1,
      login_attempts: 1,
      login_failures: 1,
    });
    const switched = run(
      [response(1, false, 60), packet(3, Buffer.alloc(20))],
      [GREETING, packet(2, [0xfe, ...Buffer.from('mysql_native_password\0')]), OK(4)],
    );
    assert.deepEqual(switched, { sessions: 1, login_attempts: 1, auth_switch_request: 1 });
  });

  it('stops reading at an SSL request, counting the upgrade', () => {
    assert.deepEqual(run([response(1, true, 32), response(2, true, 60)], [GREETING, OK(9)]), {
      sessions: 1,
      login_attempts: 1,
      upgraded_to_ssl: 1,
    });
  });

  it('counts packets out of sequence, and a greeting of another protocol as a decoder error', () => {
    assert.deepEqual(run([response(5, false, 60)], [GREETING, OK(6)]), {
      sessions: 1,
      login_attempts: 1,
      protocol_errors: 1,
    });
    assert.deepEqual(run([], [packet(0, [9, 1, 2])]), { sessions: 1, decoder_errors: 1 });
    // A server refusing the connection with an error packet is no decoder error.
    assert.deepEqual(run([], [ERR(0)]), { sessions: 1 });
  });

  it('never throws on any bytes either way, whatever their split', () => {
    const chunks = fc.array(fc.uint8Array({ maxLength: 64 }), { maxLength: 12 });
    fc.assert(
      fc.property(chunks, chunks, fc.boolean(), (client, server, greeted) => {
        const d = new MysqlDecoder(() => {});
        if (greeted) d.server(GREETING);
        for (let i = 0; i < Math.max(client.length, server.length); i++) {
          const c = client[i];
          const s = server[i];
          if (c) d.client(Buffer.from(c));
          if (s) d.server(Buffer.from(s));
        }
      }),
      { seed: 3306, numRuns: Number(process.env.FUZZ_RUNS ?? 300) },
    );
  });
});
