/**
 * A listener closing takes down the connections no chain owns yet: one waiting in the
 * ClientHello peek and one in a TLS handshake, which would otherwise stay open until the peek
 * (15 s) or handshake (120 s) timeout.
 */
import assert from 'node:assert/strict';
import * as net from 'node:net';
import { after, before, describe, it } from 'node:test';
import * as tls from 'node:tls';
import { initialState } from '../../../reducers/state.js';
import { Report } from '../../../src/bootstrap/report.js';
import { compileListener } from '../../../src/config/listener.js';
import { ConnectionLimits } from '../../../src/dataplane/listeners/limits.js';
import { ActiveListener } from '../../../src/dataplane/listeners/listener.js';
import type { NetworkFilterHandler } from '../../../src/dataplane/network-filter.js';
import { StatsStore } from '../../../src/stats/store.js';
import { makePki, type TestPki } from '../../tls/certs.js';

const TCP = {
  '@type': 'type.googleapis.com/envoy.config.filter.network.tcp_proxy.v2.TcpProxy',
  stat_prefix: 't',
  cluster: 'c',
};

/** The first record a node:tls client sends (its ClientHello), captured by a plain TCP server. */
async function captureClientHello(servername: string): Promise<Buffer> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  try {
    return await new Promise<Buffer>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('no ClientHello within 5 s')), 5000);
      server.once('connection', (socket) => {
        let buf = Buffer.alloc(0);
        socket.on('data', (d: Buffer) => {
          buf = Buffer.concat([buf, d]);
          if (buf.length >= 5 && buf.length >= 5 + buf.readUInt16BE(3)) {
            clearTimeout(timer);
            socket.destroy();
            resolve(buf.subarray(0, 5 + buf.readUInt16BE(3)));
          }
        });
      });
      const client = tls.connect({
        port: (server.address() as net.AddressInfo).port,
        host: '127.0.0.1',
        servername,
      });
      client.on('error', () => {});
    });
  } finally {
    server.close();
  }
}

function closedWithin(socket: net.Socket, ms: number): Promise<boolean> {
  return new Promise((resolve) => {
    if (socket.destroyed) return resolve(true);
    const timer = setTimeout(() => resolve(false), ms);
    socket.once('close', () => {
      clearTimeout(timer);
      resolve(true);
    });
  });
}

describe('listener close', () => {
  let pki: TestPki;
  before(() => {
    pki = makePki();
  });
  after(() => pki.remove());

  it('closes connections still in the peek or the TLS handshake', async () => {
    const leaf = pki.leaf('a.test', ['DNS:a.test']);
    const report = new Report('test');
    const { value: spec } = compileListener(
      {
        name: 'l',
        address: { socket_address: { address: '127.0.0.1', port_value: 0 } },
        filter_chains: [
          {
            filter_chain_match: { server_names: ['a.test'] },
            tls_context: {
              common_tls_context: {
                tls_certificates: [
                  { certificate_chain: { filename: leaf.cert }, private_key: { filename: leaf.key } },
                ],
              },
            },
            filters: [{ name: 'envoy.tcp_proxy', typed_config: TCP }],
          },
        ],
      },
      'listener',
      { report },
    );
    assert.ok(spec, report.errors.join('\n'));
    const handled: net.Socket[] = [];
    const handler: NetworkFilterHandler = {
      handle: (s) => handled.push(s),
      drain: () => {},
      close: async () => {},
    };
    const listener = new ActiveListener(
      spec,
      [handler],
      new StatsStore(),
      new ConnectionLimits(() => initialState),
    );
    const { port } = await listener.listen();
    // One says nothing (it waits in the peek); one sends a real ClientHello for a.test and
    // then nothing more (the TLS server waits for its Finished).
    const hello = await captureClientHello('a.test');
    const silent = net.connect(port, '127.0.0.1');
    const partial = net.connect(port, '127.0.0.1', () => partial.write(hello));
    for (const s of [silent, partial]) s.on('error', () => {}).resume();
    await new Promise((r) => setTimeout(r, 200));
    assert.equal(handled.length, 0);
    await listener.close();
    assert.ok(await closedWithin(silent, 2000), 'silent connection left open');
    assert.ok(await closedWithin(partial, 2000), 'connection in the handshake left open');
  });
});
