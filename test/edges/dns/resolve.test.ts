import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { createNameResolver } from '../../../src/edges/dns/resolve.js';
import { TestDnsServer } from '../../helpers/dns-server.js';

let server: TestDnsServer;
before(async () => {
  server = await TestDnsServer.start();
  server.set('both.test', { A: ['10.0.0.1', '10.0.0.2'], AAAA: ['fd00::1'], ttl: 7 });
  server.set('v4.test', { A: ['10.0.0.3'], ttl: 9 });
});
after(() => server.close());

const resolver = () => createNameResolver([{ address: '127.0.0.1', port: server.port }], 1000);

test('V4_ONLY and V6_ONLY ask for one family, with record TTLs', async () => {
  const r = resolver();
  assert.deepEqual(await r.resolve('both.test', 'V4_ONLY'), {
    addresses: ['10.0.0.1', '10.0.0.2'],
    ttlSeconds: 7,
  });
  assert.deepEqual(await r.resolve('both.test', 'V6_ONLY'), { addresses: ['fd00::1'], ttlSeconds: 7 });
  await assert.rejects(r.resolve('v4.test', 'V6_ONLY'));
  r.close();
});

test('AUTO prefers IPv6 and falls back to IPv4', async () => {
  const r = resolver();
  assert.deepEqual((await r.resolve('both.test', 'AUTO')).addresses, ['fd00::1']);
  assert.deepEqual((await r.resolve('v4.test', 'AUTO')).addresses, ['10.0.0.3']);
  assert.ok(server.count('v4.test', 'AAAA') >= 1, 'IPv6 was asked first');
  r.close();
});

test('unknown names fail; IP literals need no query', async () => {
  const r = resolver();
  await assert.rejects(r.resolve('missing.test', 'V4_ONLY'), /ENOTFOUND/);
  assert.deepEqual(await r.resolve('192.0.2.1', 'V6_ONLY'), { addresses: ['192.0.2.1'], ttlSeconds: null });
  r.close();
});

test('without dns_resolvers the system resolver answers (localhost via /etc/hosts)', async () => {
  const r = createNameResolver([]);
  assert.deepEqual((await r.resolve('localhost', 'V4_ONLY')).addresses, ['127.0.0.1']);
  r.close();
});
