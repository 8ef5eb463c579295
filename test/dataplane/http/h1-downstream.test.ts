import assert from 'node:assert/strict';
import * as http from 'node:http';
import * as net from 'node:net';
import { after, before, test } from 'node:test';
import { hcmConfig, type TestProxy, withTestProxy } from '../../helpers/http-dataplane.js';

// A kept-alive HTTP/1 connection lends one route timer and one stream idle timer to each of
// its requests in turn: a request's timeout counts from its own start, not its predecessor's.

let upstream: http.Server;
let upPort = 0;

before(async () => {
  upstream = http.createServer((req, res) => {
    if (req.url === '/hang') return;
    res.end('ok');
  });
  await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
  upPort = (upstream.address() as net.AddressInfo).port;
});

after(() => {
  upstream.close();
  upstream.closeAllConnections();
});

async function withProxy(
  hcmExtras: Record<string, unknown>,
  routeExtras: Record<string, unknown>,
  body: (proxy: TestProxy) => Promise<void>,
): Promise<void> {
  await withTestProxy(
    { ...hcmConfig('b', [], routeExtras), ...hcmExtras },
    [{ raw: { name: 'b', connect_timeout: '1s' }, addresses: [`127.0.0.1:${upPort}`] }],
    body,
  );
}

/**
 * On one connection: GET /fast, wait `gapMs`, GET /hang; resolves with the second response's
 * status line and the ms from its request to its response.
 */
function secondRequestTimesOut(port: number, gapMs: number): Promise<{ status: string; ms: number }> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1');
    let text = '';
    let sentAt = 0;
    const guard = setTimeout(() => {
      socket.destroy();
      reject(new Error(`no second response in time: ${JSON.stringify(text)}`));
    }, 5000);
    socket.setEncoding('latin1');
    socket.on('data', (d: string) => {
      text += d;
      const responses = text.split(/(?=HTTP\/1\.1 )/);
      if (responses.length === 1 && sentAt === 0 && /\r\n\r\nok$/.test(text)) {
        setTimeout(() => {
          sentAt = performance.now();
          socket.write('GET /hang HTTP/1.1\r\nHost: x\r\n\r\n');
        }, gapMs);
      }
      if (responses.length === 2 && sentAt > 0) {
        clearTimeout(guard);
        const ms = performance.now() - sentAt;
        socket.destroy();
        resolve({ status: (responses[1] as string).split('\r\n')[0] as string, ms });
      }
    });
    socket.on('error', reject);
    socket.write('GET /fast HTTP/1.1\r\nHost: x\r\n\r\n');
  });
}

test('route timeout: the second request on a connection gets its whole timeout', async () => {
  await withProxy({}, { timeout: '0.300s' }, async (proxy) => {
    const { status, ms } = await secondRequestTimesOut(proxy.port, 150);
    assert.match(status, /^HTTP\/1\.1 504/);
    assert.ok(ms >= 280, `timed out after ${ms.toFixed(0)} ms, before its own 300 ms`);
    assert.equal(proxy.counter('cluster.b.upstream_rq_timeout'), 1);
  });
});

test('stream_idle_timeout: the second request on a connection gets its whole timeout', async () => {
  await withProxy({ stream_idle_timeout: '0.300s' }, {}, async (proxy) => {
    const { status, ms } = await secondRequestTimesOut(proxy.port, 150);
    assert.match(status, /^HTTP\/1\.1 408/);
    assert.ok(ms >= 280, `timed out after ${ms.toFixed(0)} ms, before its own 300 ms`);
    assert.equal(proxy.counter('http.ingress.downstream_rq_idle_timeout'), 1);
  });
});
