/**
 * A peer's identity from a real certificate made by openssl: SANs split by kind, and the
 * subject in RFC 2253 order (least significant RDN first) with its specials escaped once.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import type { TLSSocket } from 'node:tls';
import { PeerIdentitySource, peerIdentitySource } from '../../../src/dataplane/listeners/peer-identity.js';

function certificate(subject: string, san: string): X509Certificate {
  const dir = mkdtempSync(join(tmpdir(), 'proxy-peer-'));
  try {
    execFileSync(
      'openssl',
      ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-days', '1'].concat(
        ['-subj', subject, '-addext', `subjectAltName=${san}`, '-keyout', 'k', '-out', 'c'],
      ),
      { cwd: dir, stdio: 'ignore' },
    );
    return new X509Certificate(readFileSync(join(dir, 'c')));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** A TLS socket as far as the identity reads it: its peer certificate, counting the reads. */
function socketWith(cert: X509Certificate | undefined) {
  const socket = {
    encrypted: true,
    reads: 0,
    getPeerX509Certificate() {
      socket.reads += 1;
      return cert;
    },
  };
  return socket;
}

describe('PeerIdentitySource', () => {
  it('splits URI and DNS SANs and prints the subject as RFC 2253, reading the certificate once', () => {
    const cert = certificate(
      '/C=US/O=Acme, Inc/CN=svc\\+1',
      'URI:spiffe://a/b,DNS:a.test,DNS:b.test,IP:127.0.0.1',
    );
    const socket = socketWith(cert);
    const source = new PeerIdentitySource(socket as unknown as TLSSocket);
    assert.deepEqual(source.get(), {
      uriSans: ['spiffe://a/b'],
      dnsSans: ['a.test', 'b.test'],
      subject: 'CN=svc\\+1,O=Acme\\, Inc,C=US',
      serverName: '',
    });
    source.get();
    assert.equal(socket.reads, 1);
  });

  it('is empty for a TLS peer without a certificate, and absent for a plain socket', () => {
    assert.deepEqual(new PeerIdentitySource(socketWith(undefined) as unknown as TLSSocket).get(), {
      uriSans: [],
      dnsSans: [],
      subject: '',
      serverName: '',
    });
    assert.equal(peerIdentitySource({ encrypted: false } as never), undefined);
    assert.equal(peerIdentitySource(undefined), undefined);
  });
});
