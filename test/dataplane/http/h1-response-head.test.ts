import assert from 'node:assert/strict';
import { test } from 'node:test';
import { PendingHead } from '../../../src/dataplane/http/h1-response-head.js';
import { Counter } from '../../../src/stats/store.js';

test('a pending head is taken once, with the first body bytes after it, and only its own bytes are counted', () => {
  const tx = new Counter('downstream_cx_tx_bytes_total');
  const head = new PendingHead(tx);
  assert.equal(head.waiting, false);
  head.set('HTTP/1.1', 200, ['server', 'envoy'], 'content-length: 2\r\n\r\n');
  assert.equal(head.waiting, true);
  const out = head.take(Buffer.from('ok'));
  assert.equal(out.toString('latin1'), 'HTTP/1.1 200 OK\r\nserver: envoy\r\ncontent-length: 2\r\n\r\nok');
  assert.equal(head.waiting, false);
  assert.equal(tx.value, out.length - 2);
});

test('a pending head taken alone: HTTP/1.0, a status the reference names, the connection field kept', () => {
  const tx = new Counter('downstream_cx_tx_bytes_total');
  const head = new PendingHead(tx);
  head.set('HTTP/1.0', 503, [], 'content-length: 0\r\nconnection: close\r\n\r\n');
  const out = head.take(null);
  assert.equal(
    out.toString('latin1'),
    'HTTP/1.0 503 Service Unavailable\r\ncontent-length: 0\r\nconnection: close\r\n\r\n',
  );
  assert.equal(tx.value, out.length);
});
