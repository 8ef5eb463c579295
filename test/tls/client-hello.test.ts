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
import { scanClientHello } from '../../src/tls/client-hello.js';

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
          // Every read short of the last byte waits for more; the last one decides.
          for (let end = 0; end < whole.length; end += step)
            assert.deepEqual(scanClientHello(whole.subarray(0, end)), { kind: 'more' });
          assert.deepEqual(scanClientHello(whole), expected);
        },
      ),
      { seed: 1313, numRuns: 40 },
    );
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
