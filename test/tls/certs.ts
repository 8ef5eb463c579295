/**
 * Certificates made by the tests with Debian's `openssl` (node:crypto cannot issue X.509):
 * a CA and leaves signed by it, in a temporary directory removed by `remove()`.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface Issued {
  cert: string;
  key: string;
  /** PEM texts. */
  certPem: string;
  keyPem: string;
}

export interface TestPki {
  dir: string;
  ca: Issued;
  /** A leaf for `name` with the given SANs (`DNS:a.test`, `URI:spiffe://x`, `IP:127.0.0.1`), signed by `ca` (or `issuer`). */
  leaf(name: string, sans: string[], issuer?: Issued): Issued;
  /** Another self-signed CA. */
  otherCa(name: string): Issued;
  remove(): void;
}

function openssl(args: string[], cwd: string): string {
  return execFileSync('openssl', args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
}

function issued(dir: string, name: string): Issued {
  const cert = join(dir, `${name}.crt`);
  const key = join(dir, `${name}.key`);
  return { cert, key, certPem: readFileSync(cert, 'utf8'), keyPem: readFileSync(key, 'utf8') };
}

function selfSigned(dir: string, name: string): Issued {
  openssl(
    ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-days', '30'].concat([
      '-subj',
      `/CN=${name}`,
      '-keyout',
      `${name}.key`,
      '-out',
      `${name}.crt`,
      '-addext',
      'basicConstraints=critical,CA:TRUE',
      '-addext',
      'keyUsage=critical,keyCertSign,cRLSign',
    ]),
    dir,
  );
  return issued(dir, name);
}

export function makePki(): TestPki {
  const dir = mkdtempSync(join(tmpdir(), 'proxy-tls-'));
  const ca = selfSigned(dir, 'ca');
  let serial = 100;
  return {
    dir,
    ca,
    leaf(name, sans, issuer = ca) {
      const ext = join(dir, `${name}.ext`);
      writeFileSync(
        ext,
        `basicConstraints=CA:FALSE\nkeyUsage=digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth,clientAuth\n${sans.length > 0 ? `subjectAltName=${sans.join(',')}\n` : ''}`,
      );
      openssl(
        [
          'req',
          '-newkey',
          'ec',
          '-pkeyopt',
          'ec_paramgen_curve:P-256',
          '-nodes',
          '-subj',
          `/CN=${name}`,
          '-keyout',
          `${name}.key`,
          '-out',
          `${name}.csr`,
        ],
        dir,
      );
      serial += 1;
      openssl(
        [
          'x509',
          '-req',
          '-in',
          `${name}.csr`,
          '-CA',
          issuer.cert,
          '-CAkey',
          issuer.key,
          '-set_serial',
          `0x${serial.toString(16)}ab`,
          '-days',
          '20',
          '-extfile',
          ext,
          '-out',
          `${name}.crt`,
        ],
        dir,
      );
      return issued(dir, name);
    },
    otherCa(name) {
      return selfSigned(dir, name);
    },
    remove() {
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** `openssl x509 -noout <flags>` of a certificate file. */
export function x509(cert: string, flags: string[]): string {
  return execFileSync('openssl', ['x509', '-noout', '-in', cert, ...flags], { encoding: 'utf8' }).trim();
}
