/**
 * What a downstream TLS peer proved about itself, read from its certificate at most once per
 * connection and only when a filter asks (most requests never look at it), with the server
 * name it asked for.
 */
import type * as net from 'node:net';
import type { TLSSocket } from 'node:tls';
import { subjectAltNames } from '../../tls/peer-check.js';
import type { PeerIdentity, TlsFacts } from '../codec/request.js';

/** A connection's peer identity, computed on first use and kept for its later requests. */
export class PeerIdentitySource {
  private identity: PeerIdentity | null = null;

  constructor(private readonly socket: TLSSocket) {}

  get(): PeerIdentity {
    if (this.identity === null) {
      const cert = this.socket.getPeerX509Certificate();
      const sans = cert ? subjectAltNames(cert) : [];
      this.identity = {
        uriSans: sans.filter((s) => s.kind === 'URI').map((s) => s.value),
        dnsSans: sans.filter((s) => s.kind === 'DNS').map((s) => s.value),
        subject: cert ? rfc2253(cert.subject) : '',
        serverName: typeof this.socket.servername === 'string' ? this.socket.servername : '',
      };
    }
    return this.identity;
  }

  /** Read anew at each call: only a script asks, and only the ones that use the SSL object. */
  facts(): TlsFacts {
    const socket = this.socket;
    const peer = socket.getPeerX509Certificate();
    const local = socket.getX509Certificate();
    const localSans = local ? subjectAltNames(local) : [];
    const names = peer ? peer.subject.split('\n') : [];
    const valuesOf = (key: string) =>
      names.filter((line) => line.startsWith(`${key}=`)).map((line) => line.slice(key.length + 1));
    const seconds = (date: string | undefined) => (date ? Math.floor(Date.parse(date) / 1000) : 0);
    return {
      validated: peer !== undefined && socket.authorized,
      sha256: peer ? peer.fingerprint256.replaceAll(':', '').toLowerCase() : '',
      serial: peer ? peer.serialNumber.toLowerCase() : '',
      issuer: peer ? rfc2253(peer.issuer) : '',
      validFrom: seconds(peer?.validFrom),
      expiration: seconds(peer?.validTo),
      pem: peer ? peer.toString() : '',
      commonName: valuesOf('CN')[0] ?? '',
      organizations: valuesOf('O'),
      localSubject: local ? rfc2253(local.subject) : '',
      localUriSans: localSans.filter((s) => s.kind === 'URI').map((s) => s.value),
      localDnsSans: localSans.filter((s) => s.kind === 'DNS').map((s) => s.value),
      version: socket.getProtocol() ?? '',
      cipher: socket.getCipher()?.name ?? '',
    };
  }
}

/** The identity source of a TLS socket; undefined for a plain one. */
export function peerIdentitySource(socket: net.Socket | undefined): PeerIdentitySource | undefined {
  return (socket as { encrypted?: boolean } | undefined)?.encrypted === true
    ? new PeerIdentitySource(socket as TLSSocket)
    : undefined;
}

/**
 * Node prints the subject one `KEY=value` per line, most significant first, values already
 * escaped as RFC 2253 wants (control characters too, so a line is one RDN); RFC 2253 lists
 * them least significant first, joined by commas.
 */
function rfc2253(multiline: string): string {
  return multiline.split('\n').filter(Boolean).reverse().join(',');
}
