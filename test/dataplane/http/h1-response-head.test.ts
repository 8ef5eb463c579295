import assert from 'node:assert/strict';
import * as net from 'node:net';
import { test } from 'node:test';
import { headTail, PendingHead } from '../../../src/dataplane/http/h1-response-head.js';
import { Counter } from '../../../src/stats/store.js';
import { until } from '../../helpers/dataplane.js';
import { hcmConfig, startProxy } from '../../helpers/http-dataplane.js';

test('a pending head is taken once, with the first body bytes after it, and only its own bytes are counted', () => {
  const tx = new Counter('downstream_cx_tx_bytes_total');
  const head = new PendingHead(tx);
  assert.equal(head.waiting, false);
  head.set('HTTP/1.1', 200, ['server', 'envoy'], 2, '\r\n', null);
  assert.equal(head.waiting, true);
  const out = head.take(Buffer.from('ok'));
  assert.equal(out.toString('latin1'), 'HTTP/1.1 200 OK\r\nserver: envoy\r\ncontent-length: 2\r\n\r\nok');
  assert.equal(head.waiting, false);
  assert.equal(tx.value, out.length - 2);
});

test('a pending head taken alone: HTTP/1.0, a status the reference names, the connection field kept', () => {
  const tx = new Counter('downstream_cx_tx_bytes_total');
  const head = new PendingHead(tx);
  head.set('HTTP/1.0', 503, [], 0, headTail(false, true, false), null);
  const out = head.take(null);
  assert.equal(
    out.toString('latin1'),
    'HTTP/1.0 503 Service Unavailable\r\ncontent-length: 0\r\nconnection: close\r\n\r\n',
  );
  assert.equal(tx.value, out.length);
});

test('the lines after a head: chunked or not, then no connection field, close or keep-alive', () => {
  assert.equal(headTail(false, false, false), '\r\n');
  assert.equal(headTail(false, true, false), 'connection: close\r\n\r\n');
  assert.equal(headTail(false, false, true), 'connection: keep-alive\r\n\r\n');
  assert.equal(headTail(true, false, false), 'transfer-encoding: chunked\r\n\r\n');
  assert.equal(headTail(true, true, true), 'transfer-encoding: chunked\r\nconnection: close\r\n\r\n');
  assert.equal(headTail(true, false, true), 'transfer-encoding: chunked\r\nconnection: keep-alive\r\n\r\n');
});

// Root cause: the HTTP/1 codec kept a response head until the first body bytes, to write both
// in one Buffer, with nothing to write it alone. An upstream that sent its head and then waited
// (an event stream before its first event, a long poll) had the head held from the client
// until the body came, and one that then closed left the client no answer at all, while the
// access log said 200. A head the same tick gave no body bytes is now written by itself.
test('a head whose body comes later reaches the client at once; one whose upstream then closes too', async () => {
  const release: Array<() => void> = [];
  const origin = net.createServer((socket) => {
    socket.on('error', () => {});
    socket.once('data', (d: Buffer) => {
      if (d.toString('latin1').startsWith('GET /closes ')) {
        socket.write('HTTP/1.1 200 OK\r\ncontent-length: 100\r\n\r\n');
        release.push(() => socket.destroy());
        return;
      }
      socket.write(
        'HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n',
      );
      release.push(() => socket.end('5\r\nhello\r\n0\r\n\r\n'));
    });
  });
  await new Promise<void>((r) => origin.listen(0, '127.0.0.1', r));
  const proxy = await startProxy(hcmConfig('backend'), [
    {
      raw: { name: 'backend', connect_timeout: '1s' },
      addresses: [`127.0.0.1:${(origin.address() as net.AddressInfo).port}`],
    },
  ]);
  const client = (path: string) => {
    const socket = net.connect(proxy.port, '127.0.0.1');
    const got = { text: '', closed: false };
    socket.on('data', (d: Buffer) => {
      got.text += d.toString('latin1');
    });
    socket.on('error', () => {});
    socket.on('close', () => {
      got.closed = true;
    });
    socket.write(`GET ${path} HTTP/1.1\r\nhost: a\r\n\r\n`);
    return { socket, got };
  };
  try {
    const stream = client('/events');
    await until(() => stream.got.text.includes('\r\n\r\n'), 10_000, 'the head before any event');
    assert.match(stream.got.text, /^HTTP\/1\.1 200 OK\r\n/);
    assert.ok(!stream.got.text.includes('hello'));
    release.shift()?.();
    await until(() => stream.got.text.endsWith('0\r\n\r\n'), 10_000, 'the event and the end');
    assert.ok(stream.got.text.includes('5\r\nhello\r\n'));
    stream.socket.destroy();

    const cut = client('/closes');
    await until(() => release.length === 1, 10_000, 'the upstream answered');
    await until(() => cut.got.text.includes('\r\n\r\n'), 10_000, 'the head before the close');
    release.shift()?.();
    await until(() => cut.got.closed, 10_000, 'the connection closed with the upstream');
    assert.match(cut.got.text, /^HTTP\/1\.1 200 OK\r\n[\s\S]*content-length: 100\r\n/);
  } finally {
    await proxy.close();
    origin.close();
  }
});

test('a head set outside an upstream read and taken by no body bytes is written at the end of its tick; a taken one is not written again', async () => {
  let accepted: net.Socket | null = null;
  const server = net.createServer((s) => {
    accepted = s;
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const peer = net.connect((server.address() as net.AddressInfo).port, '127.0.0.1');
  let got = '';
  peer.on('data', (d: Buffer) => {
    got += d.toString('latin1');
  });
  try {
    await until(() => accepted !== null, 10_000, 'the connection');
    const socket = accepted as unknown as net.Socket;
    const tx = new Counter('downstream_cx_tx_bytes_total');
    const head = new PendingHead(tx);
    head.set('HTTP/1.1', 200, [], 2, '\r\n', socket);
    socket.write(head.take(Buffer.from('ok')));
    head.set('HTTP/1.1', 204, [], -1, '\r\n', socket);
    assert.equal(head.waiting, true);
    await new Promise<void>((r) => process.nextTick(r));
    assert.equal(head.waiting, false);
    await until(() => got.includes('204'), 10_000, 'the second head');
    assert.equal(got, 'HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nokHTTP/1.1 204 No Content\r\n\r\n');
  } finally {
    peer.destroy();
    (accepted as net.Socket | null)?.destroy();
    server.close();
  }
});
