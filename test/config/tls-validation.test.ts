/**
 * A CA bundle (`trusted_ca`) with a block that does not parse. Root cause: the bundle went to
 * node:tls whole, and OpenSSL stops reading it at the first block it cannot decode, keeping the
 * certificates before it: `old root, a corrupt block, new root` loaded as `old root` alone, and
 * `--mode validate` said OK (only the first certificate was checked, for `/certs`). Every peer
 * signed by the new root then failed its handshake, with nothing said about why. The reference
 * refuses such a bundle ("Failed to load trusted CA certificates"); so now does the compile step
 * a bootstrap, a cluster, a listener and an SDS secret share.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { after, before, test } from 'node:test';
import * as tls from 'node:tls';
import { compileSecret } from '../../src/config/secret.js';
import { type Issued, makePki, type TestPki } from '../tls/certs.js';

let pki: TestPki;
let oldRoot: string;
let newRoot: Issued;
before(() => {
  pki = makePki();
  oldRoot = pki.ca.certPem;
  newRoot = pki.otherCa('new-root');
});
after(() => pki.remove());

const CORRUPT = '-----BEGIN CERTIFICATE-----\nZm9vYmFy\n-----END CERTIFICATE-----\n';

/** The findings of an SDS secret whose validation context trusts `bundle`. */
function findings(bundle: string): string[] {
  const { findings } = compileSecret(
    { name: 's', validation_context: { trusted_ca: { inline_string: bundle } } },
    '',
  );
  return findings.problems.map((p) => `${p.path}: ${p.message}`);
}

test('a bundle with a corrupt, cut or mislabelled block is refused naming the block', () => {
  const at = 'validation_context.trusted_ca';
  assert.deepEqual(findings(oldRoot + CORRUPT + newRoot.certPem), [
    `${at}: failed to load trusted CA certificates: block 2 of '<inline>' does not parse: error:0680009B:asn1 encoding routines::too long`,
  ]);
  assert.match(findings(CORRUPT + oldRoot).join(), /block 1 of '<inline>' does not parse/);
  assert.deepEqual(findings(oldRoot + newRoot.certPem.slice(0, 300)), [
    `${at}: failed to load trusted CA certificates: '<inline>' has a block with no END line`,
  ]);
  assert.deepEqual(findings(oldRoot + newRoot.certPem.replace('END CERTIFICATE', 'END CRL')), [
    `${at}: failed to load trusted CA certificates: block 2 of '<inline>' begins CERTIFICATE and ends CRL`,
  ]);
  assert.deepEqual(findings(readFileSync(pki.ca.key, 'utf8')), [`${at}: no certificate in '<inline>'`]);
  assert.deepEqual(findings(''), [`${at}: no certificate in '<inline>'`]);
});

test('a well-formed bundle loads every root, text between blocks ignored, and trusts both in a handshake', async () => {
  const bundle = `# old\n${oldRoot}\nnew root below\n${newRoot.certPem}`;
  assert.deepEqual(findings(bundle), []);
  // What node:tls makes of it: a server signed by the second root is trusted.
  const leaf = pki.leaf('server', ['DNS:server.test'], newRoot);
  const server = tls.createServer({ cert: leaf.certPem, key: leaf.keyPem }, (s) => s.end('hi'));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  try {
    const authorized = await new Promise<boolean>((resolve, reject) => {
      const c = tls.connect(
        {
          port: (server.address() as AddressInfo).port,
          host: '127.0.0.1',
          ca: bundle,
          checkServerIdentity: () => undefined,
        },
        () => {
          resolve(c.authorized);
          c.end();
        },
      );
      c.on('error', reject);
    });
    assert.equal(authorized, true);
  } finally {
    server.close();
  }
});
