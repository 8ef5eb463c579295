/** The one IP-literal check that listener, admin, STATIC and EDS addresses share. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Report } from '../../src/bootstrap/report.js';
import { checkIpLiteral } from '../../src/config/ip-literal.js';

function errorsFor(
  address: Parameters<typeof checkIpLiteral>[0],
  whose: Parameters<typeof checkIpLiteral>[3],
) {
  const report = new Report('');
  checkIpLiteral(address, 'x.address', report, whose);
  return report.errors;
}

test('a host name is refused with what to write instead, by whose address it is', () => {
  assert.match(
    errorsFor('localhost', 'admin').join(),
    /x\.address: malformed IP address: localhost \(the admin listener binds an IP/,
  );
  assert.match(
    errorsFor('example.com', 'listener').join(),
    /malformed IP address: example\.com \(a listener binds an IP/,
  );
  assert.match(
    errorsFor('db', 'endpoint').join(),
    /malformed IP address: db \(STATIC and EDS endpoints are IPs; use type STRICT_DNS/,
  );
});

test('IPv4 and IPv6 literals pass; a missing or empty address is left to the required-field rule', () => {
  for (const address of ['127.0.0.1', '0.0.0.0', '::', '::1', '::ffff:10.0.0.1', '', undefined])
    assert.deepEqual(errorsFor(address, 'admin'), [], String(address));
});

test('near-IPs that are no literal are refused', () => {
  for (const address of ['127.0.0.1:80', '[::1]', '256.0.0.1', ' 127.0.0.1', '1.2.3'])
    assert.equal(errorsFor(address, 'listener').length, 1, address);
});
