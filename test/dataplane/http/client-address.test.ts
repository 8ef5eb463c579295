import assert from 'node:assert/strict';
import { isIP } from 'node:net';
import { test } from 'node:test';
import fc from 'fast-check';
import {
  addressFromXff,
  isInternalAddress,
  isIpLiteral,
  isLoopbackAddress,
  parseIpv4,
  parseIpv6,
} from '../../../src/dataplane/http/client-address.js';

const RUNS = Number(process.env.FUZZ_RUNS ?? 300);

test('internal addresses are the reference default: RFC 1918, 127.0.0.1, fd00::/8 and ::1', () => {
  const internal = ['10.0.0.1', '10.255.255.255', '172.16.0.1', '172.31.9.9', '192.168.1.1', '127.0.0.1'];
  const external = ['11.0.0.1', '172.15.0.1', '172.32.0.1', '192.169.0.1', '8.8.8.8', '127.0.0.2', '0.0.0.0'];
  for (const ip of internal) assert.equal(isInternalAddress(ip, false), true, ip);
  for (const ip of external) assert.equal(isInternalAddress(ip, false), false, ip);
  for (const ip of ['::1', '0:0:0:0:0:0:0:1', 'fd00::1', 'FDab:1::2'])
    assert.equal(isInternalAddress(ip, false), true, ip);
  // fc00::/8 is not yet assigned (the reference counts only fd00::/8); a v4-mapped address is IPv6.
  for (const ip of ['fc00::1', '2001:db8::1', '::ffff:10.0.0.1', '::', 'fe80::1'])
    assert.equal(isInternalAddress(ip, false), false, ip);
  assert.equal(isInternalAddress('', false), false, 'a unix socket peer is external by default');
  assert.equal(isInternalAddress('', true), true, 'and internal with internal_address_config.unix_sockets');
  assert.equal(isInternalAddress('not-an-ip', true), false);
});

test('loopback for the x-forwarded-for append is 127/8 and ::1', () => {
  assert.equal(isLoopbackAddress('127.0.0.1'), true);
  assert.equal(isLoopbackAddress('127.9.9.9'), true);
  assert.equal(isLoopbackAddress('::1'), true);
  assert.equal(isLoopbackAddress('10.0.0.1'), false);
  assert.equal(isLoopbackAddress('::2'), false);
});

test('IP literals: malformed ones are no address', () => {
  for (const bad of [
    '',
    '1.2.3',
    '1.2.3.4.5',
    '256.1.1.1',
    '01.2.3.4',
    '1..2.3',
    '1.2.3.4 ',
    ' 1.2.3.4',
    'a.b.c.d',
    ':',
    ':::',
    '1:2:3:4:5:6:7',
    '1:2:3:4:5:6:7:8:9',
    '1::2::3',
    '12345::1',
    '::1:',
    'fe80::1%eth0',
    '::ffff:1.2.3',
    '1.2.3.4::',
    '[::1]',
    'unknown',
  ])
    assert.equal(isIpLiteral(bad), false, JSON.stringify(bad));
  assert.equal(parseIpv4('1.2.3.4'), 0x01020304);
  assert.deepEqual(parseIpv6('1::'), [1, 0, 0, 0, 0, 0, 0, 0]);
  assert.deepEqual(parseIpv6('::ffff:1.2.3.4'), [0, 0, 0, 0, 0, 0xffff, 0x0102, 0x0304]);
  assert.deepEqual(parseIpv6('1:2:3:4:5:6:7:8'), [1, 2, 3, 4, 5, 6, 7, 8]);
});

test('property: the hand parsers accept exactly what node:net isIP accepts', () => {
  const v4 = fc.tuple(fc.nat(300), fc.nat(300), fc.nat(300), fc.nat(300)).map((parts) => parts.join('.'));
  const v6 = fc
    .array(
      fc.oneof(
        fc.string({ unit: fc.constantFrom(...'0123456789abcdefABCDEFg'), maxLength: 5 }),
        fc.constant(''),
      ),
      {
        minLength: 1,
        maxLength: 10,
      },
    )
    .map((groups) => groups.join(':'));
  const mixed = fc.tuple(v6, v4).map(([a, b]) => `${a}:${b}`);
  fc.assert(
    fc.property(fc.oneof(v4, v6, mixed, fc.string({ maxLength: 20 })), (s) => {
      // Node accepts zone ids (fe80::1%eth0); a client address never has one.
      if (s.includes('%')) return;
      assert.equal(isIpLiteral(s), isIP(s) !== 0, JSON.stringify(s));
    }),
    { seed: 25, numRuns: RUNS * 10 },
  );
});

test('x-forwarded-for: the address past the trusted hops, trimmed; single only for one entry and no skip', () => {
  assert.deepEqual(addressFromXff(null, 0), { address: null, single: false });
  assert.deepEqual(addressFromXff('1.2.3.4', 0), { address: '1.2.3.4', single: true });
  assert.deepEqual(addressFromXff(' 1.2.3.4 ', 0), { address: '1.2.3.4', single: true });
  assert.deepEqual(addressFromXff('1.1.1.1, 2.2.2.2,3.3.3.3', 0), { address: '3.3.3.3', single: false });
  assert.deepEqual(addressFromXff('1.1.1.1, 2.2.2.2,3.3.3.3', 1), { address: '2.2.2.2', single: false });
  assert.deepEqual(addressFromXff('1.1.1.1, 2.2.2.2,3.3.3.3', 2), { address: '1.1.1.1', single: false });
  assert.deepEqual(addressFromXff('1.1.1.1, 2.2.2.2,3.3.3.3', 3), { address: null, single: false });
  assert.deepEqual(addressFromXff('1.1.1.1', 1), { address: null, single: false });
  assert.deepEqual(addressFromXff('2001:db8::1, 10.0.0.1', 1), { address: '2001:db8::1', single: false });
});

test('x-forwarded-for: malformed lists give no address (the client is then not internal)', () => {
  for (const [xff, skip] of [
    ['', 0],
    [',', 0],
    ['1.2.3.4,', 0],
    ['10.0.0.1, unknown', 0],
    ['10.0.0.1, 10.0.0.2:8080', 0],
    [',10.0.0.1', 1],
    ['10.0.0.1,,', 1],
    ['"10.0.0.1"', 0],
  ] as const)
    assert.equal(addressFromXff(xff, skip).address, null, `${JSON.stringify(xff)} skip ${skip}`);
});

test('property: any list gives the trimmed entry skip+1 from the right when it is an IP, else none', () => {
  const entry = fc.oneof(
    fc.ipV4(),
    fc.ipV6(),
    fc.string({ maxLength: 8 }),
    fc.constantFrom(' 10.0.0.1', '10.0.0.1 ', ''),
  );
  fc.assert(
    fc.property(fc.array(entry, { minLength: 1, maxLength: 6 }), fc.nat(6), (entries, skip) => {
      const xff = entries.join(',');
      const parts = xff.split(',');
      const got = addressFromXff(xff, skip);
      const want = skip < parts.length ? (parts[parts.length - 1 - skip] as string).trim() : null;
      const isIp = want !== null && !want.includes('%') && isIP(want) !== 0;
      if (!isIp) {
        // Only a trailing-comma list is read whole by the reference; that is never an IP either.
        assert.equal(got.address, null, `${JSON.stringify(xff)} skip ${skip}`);
        return;
      }
      assert.equal(got.address, want);
      assert.equal(got.single, parts.length === 1 && skip === 0);
    }),
    { seed: 2525, numRuns: RUNS * 3 },
  );
});
