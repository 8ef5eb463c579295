/**
 * Hostile HTTP/1.1 upstream responses, from a raw-socket origin (issue 25).
 * Root cause of the 101 finding: the pool skipped every status under 200 as an interim
 * answer, `101 Switching Protocols` included, and parsed the bytes after it (the other
 * protocol's) as the response. The pool never sends an upgrade (tunnels have their own
 * connection, src/dataplane/http/upgrade.ts), so every 101 it reads is unsolicited: 502 `UPE`.
 * The framing errors after a head are answered as docs/reliability.md says.
 */
import assert from 'node:assert/strict';
import * as net from 'node:net';
import { after, before, test } from 'node:test';
import type { StreamInfo } from '../../../src/dataplane/access-log/stream-info.js';
import { flagsText } from '../../../src/dataplane/access-log/stream-info.js';
import {
  hcmConfig,
  loggedStreams,
  rawExchange,
  startProxy,
  type TestProxy,
} from '../../helpers/http-dataplane.js';

/** What the origin answers, by request path; `close`: it closes the connection after. */
const ANSWERS: Record<string, { bytes: string; close?: boolean }> = {
  '/unsolicited-101': {
    bytes:
      'HTTP/1.1 101 Switching Protocols\r\nupgrade: websocket\r\nconnection: upgrade\r\n\r\n' +
      'HTTP/1.1 200 OK\r\ncontent-length: 5\r\n\r\nsmugg',
  },
  '/continue': { bytes: 'HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok' },
  '/bad-chunk': { bytes: 'HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n5\r\nhello\r\nZZ\r\n' },
  '/early-close': { bytes: 'HTTP/1.1 200 OK\r\ncontent-length: 10\r\n\r\nhello', close: true },
  '/excess': { bytes: 'HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nokEXTRA BYTES' },
  '/plain': { bytes: 'HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok' },
};

let origin: net.Server;
let connections = 0;
let proxy: TestProxy;
let logged: StreamInfo[] = [];

before(async () => {
  origin = net.createServer((socket) => {
    connections += 1;
    socket.on('error', () => {});
    let head = '';
    socket.on('data', (chunk: Buffer) => {
      head += chunk.toString('latin1');
      for (;;) {
        const end = head.indexOf('\r\n\r\n');
        if (end < 0) return;
        const path = head.split(' ')[1] ?? '';
        head = head.slice(end + 4);
        const answer = ANSWERS[path] ?? ANSWERS['/plain'];
        socket.write(answer?.bytes ?? '');
        if (answer?.close) socket.end();
      }
    });
  });
  await new Promise<void>((resolve) => origin.listen(0, '127.0.0.1', resolve));
  const port = (origin.address() as net.AddressInfo).port;
  proxy = await startProxy(hcmConfig('origin'), [
    { raw: { name: 'origin' }, addresses: [`127.0.0.1:${port}`] },
  ]);
  logged = loggedStreams(proxy);
});

after(async () => {
  await proxy.close();
  origin.close();
});

const get = (path: string) =>
  rawExchange(proxy.port, `GET ${path} HTTP/1.1\r\nhost: a.test\r\nconnection: close\r\n\r\n`, 3000);
const flagsOf = (path: string) => flagsText(logged.find((i) => i.request?.path === path)?.flags ?? 0);

test('an unsolicited 101 is a 502 with UPE and a protocol error; nothing after it is read as the response', async () => {
  const before = proxy.counter('cluster.origin.upstream_cx_protocol_error');
  const answer = await get('/unsolicited-101');
  assert.match(answer, /^HTTP\/1\.1 502 /);
  assert.doesNotMatch(answer, /smugg/);
  assert.equal(proxy.counter('cluster.origin.upstream_cx_protocol_error'), before + 1);
  assert.equal(flagsOf('/unsolicited-101'), 'UPE');
});

test('a 100 Continue before the response is skipped', async () => {
  assert.match(await get('/continue'), /^HTTP\/1\.1 200 [\s\S]*\r\n\r\nok$/);
});

test('a bad chunk after the head: the client gets the head and the body so far, then its connection closes unterminated', async () => {
  const before = proxy.counter('cluster.origin.upstream_cx_protocol_error');
  const answer = await get('/bad-chunk');
  assert.match(answer, /^HTTP\/1\.1 200 /);
  assert.match(answer, /hello/);
  assert.doesNotMatch(answer, /\r\n0\r\n\r\n$/, 'no last chunk: the client sees the body cut');
  assert.equal(proxy.counter('cluster.origin.upstream_cx_protocol_error'), before + 1);
});

test('an upstream closing before its content-length: the client gets fewer bytes than announced, then the close', async () => {
  const answer = await get('/early-close');
  assert.match(answer, /^HTTP\/1\.1 200 [\s\S]*content-length: 10\r\n[\s\S]*\r\n\r\nhello$/);
  assert.equal(flagsOf('/early-close'), 'UC');
});

test('bytes after a complete response are dropped with the connection, never read as the next response', async () => {
  const opened = connections;
  assert.match(await get('/excess'), /^HTTP\/1\.1 200 [\s\S]*\r\n\r\nok$/);
  assert.match(await get('/plain'), /^HTTP\/1\.1 200 [\s\S]*\r\n\r\nok$/);
  assert.equal(connections, opened + 2, 'the second request went out on a new connection');
});
