/**
 * The ClientHello scan on real ClientHellos from node:tls clients, whole and re-cut into
 * several records and arbitrary reads: nothing is decided before the last byte, and then the
 * SNI and ALPN the client sent come out.
 */
import assert from 'node:assert/strict';
import * as net from 'node:net';
import { after, before, describe, it } from 'node:test';
import * as tls from 'node:tls';
import fc from 'fast-check';
import { ClientHelloReader, scanClientHello } from '../../src/tls/client-hello.js';

/** Captures the first TLS record a client sends. */
class HelloTrap {
  private server = net.createServer();
  private waiting: Array<(b: Buffer) => void> = [];
  port = 0;

  async start(): Promise<void> {
    this.server.on('connection', (socket) => {
      let buf = Buffer.alloc(0);
      socket.on('data', (d: Buffer) => {
        buf = Buffer.concat([buf, d]);
        if (buf.length >= 5 && buf.length >= 5 + buf.readUInt16BE(3)) {
          socket.destroy();
          this.waiting.shift()?.(buf.subarray(0, 5 + buf.readUInt16BE(3)));
        }
      });
      socket.on('error', () => {});
    });
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.port = (this.server.address() as net.AddressInfo).port;
  }

  hello(servername: string | undefined, alpn: string[]): Promise<Buffer> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('no ClientHello within 5 s')), 5000);
      this.waiting.push((b) => {
        clearTimeout(timer);
        resolve(b);
      });
      const client = tls.connect({
        host: '127.0.0.1',
        port: this.port,
        ...(servername ? { servername } : {}),
        ...(alpn.length > 0 ? { ALPNProtocols: alpn } : {}),
        rejectUnauthorized: false,
      });
      client.on('error', () => {});
    });
  }

  close(): void {
    this.server.close();
  }
}

/** The handshake message of one record re-cut into records of the given sizes. */
function recut(record: Buffer, sizes: number[]): Buffer {
  const body = record.subarray(5);
  const out: Buffer[] = [];
  let at = 0;
  for (const size of [...sizes, body.length]) {
    if (at >= body.length) break;
    const piece = body.subarray(at, Math.min(body.length, at + Math.max(1, size)));
    const head = Buffer.from([0x16, 3, 1, 0, 0]);
    head.writeUInt16BE(piece.length, 3);
    out.push(head, piece);
    at += piece.length;
  }
  return Buffer.concat(out);
}

const label = fc.stringMatching(/^[a-z0-9]([a-z0-9-]{0,10}[a-z0-9])?$/);
const hostname = fc.array(label, { minLength: 1, maxLength: 4 }).map((l) => [...l, 'test'].join('.'));
const protocol = fc.stringMatching(/^[a-z0-9./-]{1,16}$/);

describe('scanClientHello', () => {
  const trap = new HelloTrap();
  before(() => trap.start());
  after(() => trap.close());

  it('reads SNI and ALPN from real ClientHellos, however they are cut', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.option(hostname, { nil: undefined }),
        fc.array(protocol, { maxLength: 4 }),
        fc.array(fc.integer({ min: 1, max: 200 }), { maxLength: 4 }),
        fc.integer({ min: 1, max: 97 }),
        async (name, alpn, sizes, step) => {
          const whole = recut(await trap.hello(name, alpn), sizes);
          const expected = { kind: 'tls', serverName: (name ?? '').toLowerCase(), alpn };
          // Whole at once, or pushed in reads of `step` bytes: every read short of the last
          // byte waits for more; the last one decides.
          assert.deepEqual(scanClientHello(whole), expected);
          const reader = new ClientHelloReader();
          for (let at = 0; at < whole.length; at += step) {
            const scan = reader.push(whole.subarray(at, Math.min(whole.length, at + step)));
            if (at + step < whole.length) assert.deepEqual(scan, { kind: 'more' });
            else assert.deepEqual(scan, expected);
          }
        },
      ),
      { seed: 1313, numRuns: 40 },
    );
  });

  it('reads a large ClientHello cut into one-byte records, a record per read, in linear time', () => {
    // A ClientHello with SNI, ALPN and a 40 KB padding extension (type 21), built by hand.
    const ext = (type: number, body: Buffer) => {
      const head = Buffer.alloc(4);
      head.writeUInt16BE(type, 0);
      head.writeUInt16BE(body.length, 2);
      return Buffer.concat([head, body]);
    };
    const name = Buffer.from('big.test');
    const sni = Buffer.concat([Buffer.from([0, name.length + 3, 0, 0, name.length]), name]);
    const alpn = Buffer.from([0, 3, 2, 0x68, 0x32]);
    const extensions = Buffer.concat([ext(0, sni), ext(16, alpn), ext(21, Buffer.alloc(40_000))]);
    const extLen = Buffer.alloc(2);
    extLen.writeUInt16BE(extensions.length);
    const body = Buffer.concat([
      Buffer.from([3, 3]),
      Buffer.alloc(32),
      Buffer.from([0, 0, 2, 0x13, 0x01, 1, 0]),
      extLen,
      extensions,
    ]);
    const hs = Buffer.concat([Buffer.from([1, 0, 0, 0]), body]);
    hs.writeUIntBE(body.length, 1, 3);
    const whole = recut(Buffer.concat([Buffer.alloc(5), hs]), Array(hs.length).fill(1));
    const started = performance.now();
    const reader = new ClientHelloReader();
    let result = reader.push(Buffer.alloc(0));
    for (let at = 0; at < whole.length; at += 6) result = reader.push(whole.subarray(at, at + 6));
    const ms = performance.now() - started;
    assert.deepEqual(result, { kind: 'tls', serverName: 'big.test', alpn: ['h2'] });
    // Rescanning everything read at each record would copy ~10 GB here.
    assert.ok(ms < 3000, `${Math.round(ms)} ms`);
  });

  it('says plain at the first byte that is not a TLS handshake record', () => {
    assert.deepEqual(scanClientHello(Buffer.from('G')), { kind: 'plain' });
    assert.deepEqual(scanClientHello(Buffer.from('PRI * HTTP/2.0\r\n')), { kind: 'plain' });
    assert.deepEqual(scanClientHello(Buffer.from([0x16, 0x47])), { kind: 'plain' });
    assert.deepEqual(scanClientHello(Buffer.alloc(0)), { kind: 'more' });
  });

  it('gives up on a handshake larger than the limit: TLS with nothing to match on', () => {
    const head = Buffer.from([0x16, 3, 1, 0, 8, 1, 0x02, 0, 0, 0, 0, 0, 0]);
    assert.deepEqual(scanClientHello(head), { kind: 'tls', serverName: '', alpn: [] });
  });
});
