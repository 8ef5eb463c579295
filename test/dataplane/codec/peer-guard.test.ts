/**
 * Root cause: the main thread is data-plane thread 0, and nothing stood between a peer's bytes
 * and the event loop, so any throw while handling them (an HPACK bomb's RangeError, EMFILE in
 * a timer, a null on the hot-restart socket: each its own bug) ended the whole process. The
 * guard makes the next such bug cost one connection: these tests throw on a peer's bytes
 * through the preload seam test/helpers/throw-on-peer-bytes.mjs, since no real input that
 * throws is left, and check that the proxy serves on, counts and logs it.
 */
import assert from 'node:assert/strict';
import * as http from 'node:http';
import * as net from 'node:net';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { type PeerFaultSink, peerFault, setPeerFaultSink } from '../../../src/dataplane/codec/peer-guard.js';
import { hcmWithRoutes, httpBootstrap } from '../../helpers/bootstraps.js';
import { repoRoot } from '../../helpers/cli.js';
import { cluster } from '../../helpers/dataplane.js';
import { FRAME, headersFrame, type RawH2, rawH2 } from '../../helpers/h2-frames.js';
import { rawExchange } from '../../helpers/http-dataplane.js';
import { type ProxyProcess, startProxyProcess } from '../../helpers/proxy-process.js';

const MARKER = 'x-throw-in-the-proxy';

/**
 * A request answered on a kept-alive connection, then `next` on it (its bytes come through the
 * socket's reads into the thread's buffer, where the seam throws): what came back to `next`
 * until the proxy closed the connection.
 */
function secondRequest(port: number, next: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1');
    let text = '';
    let sent = false;
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`no close within 10 s; got ${JSON.stringify(text)}`));
    }, 10_000);
    socket.on('data', (c: Buffer) => {
      text += c.toString('latin1');
      if (!sent && text.endsWith('served')) {
        sent = true;
        text = '';
        socket.write(next);
      }
    });
    socket.on('close', () => {
      clearTimeout(timer);
      if (sent) resolve(text);
      else reject(new Error(`the first request was not served: ${JSON.stringify(text)}`));
    });
    socket.on('error', () => {});
    socket.write('GET / HTTP/1.1\r\nhost: a\r\n\r\n');
  });
}

async function stat(proxy: ProxyProcess, name: string): Promise<number> {
  const body = (await proxy.get('/stats')).body;
  return Number(new RegExp(`^${name.replaceAll('.', '\\.')}: (\\d+)$`, 'm').exec(body)?.[1] ?? -1);
}

describe('the peer-input guard, with a real proxy at --concurrency 2', () => {
  let upstream: http.Server;
  let proxy: ProxyProcess;
  let port: number;

  before(async () => {
    upstream = http.createServer((_req, res) => res.end('served'));
    await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
    const upstreamPort = (upstream.address() as net.AddressInfo).port;
    proxy = await startProxyProcess(
      httpBootstrap(
        [cluster('origin', [upstreamPort])],
        hcmWithRoutes([{ match: { prefix: '/' }, route: { cluster: 'origin' } }]),
      ),
      ['--concurrency', '2'],
      60_000,
      {
        NODE_OPTIONS: `--import=${join(repoRoot, 'test/helpers/throw-on-peer-bytes.mjs')}`,
        THROW_ON_PEER_BYTES: MARKER,
      },
    );
    port = await proxy.listenerPort('http');
  });

  after(async () => {
    await proxy?.stop();
    upstream?.close();
  });

  it('closes the connection whose bytes threw, serves the next ones, counts and logs each', async () => {
    const good = 'GET / HTTP/1.1\r\nhost: a\r\nconnection: close\r\n\r\n';
    assert.match(await rawExchange(port, good, 10_000), /^HTTP\/1\.1 200[\s\S]*served$/);
    // Eight connections, each from its own port: the kernel spreads them over both threads'
    // sockets (all on one thread has odds of 1 in 128), so the main thread's guard is hit too.
    const faults = 8;
    for (let i = 0; i < faults; i++) {
      const answer = await secondRequest(port, `GET / HTTP/1.1\r\nhost: a\r\n${MARKER}: 1\r\n\r\n`);
      assert.equal(answer, '', 'the connection is closed without an answer');
      assert.equal(proxy.child.exitCode, null, 'the proxy is still running');
      assert.match(
        await rawExchange(port, good, 10_000),
        /^HTTP\/1\.1 200[\s\S]*served$/,
        'the next request is served',
      );
    }
    assert.equal(await stat(proxy, 'server.envoy_bug_failures'), faults, 'every thread counted its own');
    assert.match(
      proxy.stderr(),
      /exception on socket read input[\s\S]*a throw on peer bytes, asked for by the test/,
    );
    assert.match(proxy.stderr(), /at Buffer\.subarray/, 'with its stack');
  });

  it('closes an HTTP/2 connection whose frame threw (a read after the preface), and serves the next one', async () => {
    const settled = (h2: RawH2) => h2.until((fs) => fs.some((f) => f.type === FRAME.SETTINGS), 10_000);
    const request = (value: string) =>
      headersFrame(
        1,
        [
          [':method', 'GET'],
          [':scheme', 'http'],
          [':path', '/'],
          [':authority', 'a'],
          ['x-test', value],
        ],
        true,
      );
    const bad = await rawH2(port);
    await settled(bad);
    bad.send(request(MARKER));
    assert.equal(await bad.closed(10_000), true, 'the connection is closed');
    assert.equal(proxy.child.exitCode, null, 'the proxy is still running');
    const good = await rawH2(port);
    await settled(good);
    good.send(request('plain'));
    const frames = await good.until(
      (fs) => fs.some((f) => f.type === FRAME.HEADERS && f.streamId === 1),
      10_000,
    );
    assert.ok(
      frames.some((f) => f.type === FRAME.HEADERS && f.streamId === 1),
      'the next connection is answered',
    );
    good.socket.destroy();
    assert.equal(await stat(proxy, 'server.envoy_bug_failures'), 9);
  });
});

describe('peerFault', () => {
  it('destroys the connection, counts every fault and logs at most one a second with the number not logged', () => {
    const logged: Array<{ where: string; notLogged: number }> = [];
    let counted = 0;
    const sink: PeerFaultSink = {
      count: () => counted++,
      log: (_err, where, notLogged) => logged.push({ where, notLogged }),
    };
    setPeerFaultSink(sink);
    let destroyed = 0;
    const connection = { destroy: () => destroyed++ };
    for (let i = 0; i < 5; i++) peerFault(new Error('bug'), 'test', connection);
    assert.equal(destroyed, 5);
    assert.equal(counted, 5);
    assert.deepEqual(logged, [{ where: 'test', notLogged: 0 }], 'the first one, then none within the second');
  });

  it('counts and logs even when destroying the connection throws', () => {
    let counted = 0;
    setPeerFaultSink({ count: () => counted++, log: () => {} });
    assert.throws(() =>
      peerFault(new Error('bug'), 'test', {
        destroy() {
          throw new Error('destroy failed');
        },
      }),
    );
    assert.equal(counted, 1);
  });
});
