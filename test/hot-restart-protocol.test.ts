import assert from 'node:assert/strict';
import * as net from 'node:net';
import { test } from 'node:test';
import { hotRestartVersion } from '../src/cli/hot-restart-version.js';
import { ListenSockets } from '../src/dataplane/listeners/sockets.js';
import {
  domainSocket,
  HANDOVER_FORMAT_VERSION,
  readLines,
  socketKey,
  writeLine,
} from '../src/hot-restart-protocol.js';

test('domain socket names: the _{role}_{id} suffix, id = base_id * 10 + epoch % 3, @ is abstract', () => {
  assert.deepEqual(domainSocket('@proxy_domain_socket', 'parent', 0, 0), {
    name: '@proxy_domain_socket_parent_0',
    address: '\0proxy_domain_socket_parent_0',
    abstract: true,
  });
  assert.equal(domainSocket('@s', 'parent', 2, 4).name, '@s_parent_21');
  assert.deepEqual(domainSocket('/run/proxy/hr', 'parent', 1, 3), {
    name: '/run/proxy/hr_parent_10',
    address: '/run/proxy/hr_parent_10',
    abstract: false,
  });
});

test('sockets are asked for by ip:port, IPv6 in brackets', () => {
  assert.equal(socketKey('127.0.0.1', 8080), '127.0.0.1:8080');
  assert.equal(socketKey('::1', 8080), '[::1]:8080');
});

test('the hot-restart version leads with the handover format version', () => {
  const version = hotRestartVersion({ disableHotRestart: false, maxStats: 16384, maxObjNameLen: 60 });
  assert.equal(version.split('.')[0], String(HANDOVER_FORMAT_VERSION));
});

test('lines: one JSON message per line, whatever the chunks; a line that is not JSON closes', async () => {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const accepted = new Promise<net.Socket>((resolve) => server.once('connection', resolve));
  const client = net.connect((server.address() as net.AddressInfo).port, '127.0.0.1');
  const peer = await accepted;
  const got: unknown[] = [];
  readLines(peer, (msg) => got.push(msg));
  writeLine(client, { type: 'drain' });
  client.write('{"type":"release-');
  await new Promise((r) => setTimeout(r, 20));
  client.write('log"}\n');
  const closed = new Promise<void>((resolve) => peer.once('close', () => resolve()));
  peer.on('error', () => {});
  client.on('error', () => {});
  client.write('not json\n');
  await Promise.race([
    closed,
    new Promise((_, reject) => setTimeout(() => reject(new Error('not closed')), 2000)),
  ]);
  assert.deepEqual(got, [{ type: 'drain' }, { type: 'release-log' }]);
  client.destroy();
  server.close();
});

test('offered sockets: found while listening, and a stopped handover resumes', async () => {
  const sockets = new ListenSockets();
  assert.equal(await sockets.adopt('127.0.0.1:1'), null, 'no parent: bind');
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const key = socketKey('127.0.0.1', (server.address() as net.AddressInfo).port);
  const calls: string[] = [];
  const withdraw = sockets.offer(key, server, {
    stop: () => calls.push('stop'),
    resume: () => calls.push('resume'),
  });
  const offered = sockets.find(key);
  assert.equal(offered?.server, server);
  offered?.onHandover();
  sockets.resumeStopped();
  sockets.resumeStopped();
  assert.deepEqual(calls, ['stop', 'resume'], 'resumed once');
  withdraw();
  assert.equal(sockets.find(key), null);
  server.close();
  assert.equal(sockets.find('127.0.0.1:1'), null);
});
