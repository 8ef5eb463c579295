import assert from 'node:assert/strict';
import * as net from 'node:net';
import { after, before, test } from 'node:test';
import { hcmConfig, startProxy, type TestProxy } from '../../helpers/http-dataplane.js';

// Issue 11, finding 7 (retry part): about 10 % of requests got 503 when the upstream closed
// idle keep-alive connections; the reference retries a request that failed on a reused
// connection before any response byte came back.

let upstream: net.Server;
let proxy: TestProxy;
let closedIdle = 0;

/** A fixed-seed generator, so the close timings are the same on every run. */
function lcg(seed: number): () => number {
  let x = seed;
  return () => {
    x = (x * 1103515245 + 12345) % 2 ** 31;
    return x / 2 ** 31;
  };
}
const random = lcg(11);

before(async () => {
  // A keep-alive server that answers each request, then closes the connection while it is
  // idle after 0-3 ms: what a server with a short keep-alive timeout does under load.
  upstream = net.createServer((socket) => {
    let buf = '';
    socket.on('error', () => {});
    socket.on('data', (chunk) => {
      buf += chunk.toString('latin1');
      const end = buf.indexOf('\r\n\r\n');
      if (end < 0) return;
      buf = buf.slice(end + 4);
      socket.write('HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok');
      setTimeout(
        () => {
          closedIdle += 1;
          socket.destroy();
        },
        Math.floor(random() * 4),
      );
    });
  });
  await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
  const port = (upstream.address() as net.AddressInfo).port;
  proxy = await startProxy(hcmConfig('b'), [{ raw: { name: 'b' }, addresses: [`127.0.0.1:${port}`] }]);
});

after(async () => {
  await proxy.close();
  upstream.close();
});

/** One request on its own downstream connection; resolves with the status line's code. */
function request(path: string): Promise<number> {
  return new Promise((resolve) => {
    const socket = net.connect(proxy.port, '127.0.0.1');
    let data = '';
    const timer = setTimeout(() => socket.destroy(), 3000);
    socket.on('data', (c) => {
      data += c.toString('latin1');
    });
    socket.on('close', () => {
      clearTimeout(timer);
      resolve(Number(data.split(' ')[1] ?? 0));
    });
    socket.on('error', () => {});
    socket.write(`GET ${path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`);
  });
}

test('500 sequential requests through an upstream closing idle connections: no 503', async () => {
  const statuses = new Map<number, number>();
  for (let i = 0; i < 500; i++) {
    const status = await request(`/r/${i}`);
    statuses.set(status, (statuses.get(status) ?? 0) + 1);
    // Requests spaced like the closes, so some hit a connection as the server closes it.
    if (i % 3 === 0) await new Promise((r) => setTimeout(r, Math.floor(random() * 3)));
  }
  assert.deepEqual([...statuses], [[200, 500]]);
  assert.ok(closedIdle > 0);
  // Some requests did meet a closing connection, and were sent again.
  assert.ok(proxy.counter('cluster.b.upstream_rq_retry_reused_connection') > 0);
  // The retry is transparent: it is not one of the route's retry policy attempts.
  assert.equal(proxy.counter('cluster.b.upstream_rq_retry'), 0);
});

// Root cause: the resend after a reused connection failed with no response byte applied to
// every method, and no proxy can tell an upstream that closed while idle from one that read a
// request, acted on it and closed: a POST such an upstream had taken was sent to it twice,
// with no retry policy configured. RFC 9110 9.2.2: a proxy never retries a method that is not
// idempotent on its own; it gets the 503 the reference answers (a retry policy may still ask).
test('a POST an upstream took before closing its reused connection is sent once; a GET again', async () => {
  const seen: string[] = [];
  const origin = net.createServer((socket) => {
    socket.on('error', () => {});
    let buf = '';
    let served = 0;
    socket.on('data', (chunk) => {
      buf += chunk.toString('latin1');
      for (let end = buf.indexOf('\r\n\r\n'); end >= 0; end = buf.indexOf('\r\n\r\n')) {
        const head = buf.slice(0, end);
        const length = Number(/content-length: *(\d+)/i.exec(head)?.[1] ?? 0);
        if (buf.length < end + 4 + length) return;
        buf = buf.slice(end + 4 + length);
        seen.push(head.split(' ').slice(0, 2).join(' '));
        // The first request of a connection is answered; a later one is taken, then the
        // connection closed unanswered, as a server that fails after acting on it.
        if (served++ === 0) socket.write('HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok');
        else socket.destroy();
      }
    });
  });
  await new Promise<void>((r) => origin.listen(0, '127.0.0.1', r));
  const port = (origin.address() as net.AddressInfo).port;
  const front = await startProxy(hcmConfig('o'), [{ raw: { name: 'o' }, addresses: [`127.0.0.1:${port}`] }]);
  /** Two requests on one client connection, the second `method /second`: their status codes. */
  const twice = async (method: string): Promise<number[]> => {
    const socket = net.connect(front.port, '127.0.0.1');
    socket.on('error', () => {});
    let data = '';
    socket.on('data', (c) => {
      data += c.toString('latin1');
    });
    const answers = (n: number) => (data.match(/HTTP\/1\.1 \d+/g) ?? []).length >= n;
    const wait = async (n: number) => {
      for (let i = 0; i < 100 && !answers(n); i++) await new Promise((r) => setTimeout(r, 50));
    };
    socket.write('GET /first HTTP/1.1\r\nHost: x\r\n\r\n');
    await wait(1);
    socket.write(`${method} /second HTTP/1.1\r\nHost: x\r\ncontent-length: 3\r\n\r\nabc`);
    await wait(2);
    socket.destroy();
    return (data.match(/HTTP\/1\.1 \d+/g) ?? []).map((line) => Number(line.slice(9)));
  };
  try {
    assert.deepEqual(await twice('POST'), [200, 503]);
    assert.deepEqual(
      seen.filter((s) => s === 'POST /second'),
      ['POST /second'],
    );
    assert.equal(front.counter('cluster.o.upstream_rq_retry_reused_connection'), 0);
    seen.length = 0;
    assert.deepEqual(await twice('PUT'), [200, 200]);
    assert.deepEqual(
      seen.filter((s) => s === 'PUT /second'),
      ['PUT /second', 'PUT /second'],
    );
    assert.equal(front.counter('cluster.o.upstream_rq_retry_reused_connection'), 1);
  } finally {
    await front.close();
    origin.close();
  }
});
