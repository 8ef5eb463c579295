/**
 * Runs Debian's `testssl` (package testssl.sh) against a TLS listener of this proxy with its
 * default TLS parameters, and prints what it found: protocols offered, cipher categories,
 * forward secrecy, and every finding of severity LOW or worse. Not part of `npm test` or
 * `npm run bench` (it takes a minute or two). Run: `node --import tsx bench/tls/testssl.ts`.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { startProxyProcess } from '../../test/helpers/proxy-process.js';
import { makePki } from '../../test/tls/certs.js';
import { hcmListener } from '../../test/tls/helpers.js';
import { findExecutable } from '../lib/processes.js';

interface Finding {
  id: string;
  severity: string;
  finding: string;
}

const testssl = findExecutable('testssl') ?? findExecutable('testssl.sh');
if (!testssl) {
  console.error('testssl is not installed (Debian: apt-get install testssl.sh)');
  process.exit(1);
}
const pki = makePki();
const cert = pki.leaf('localhost', ['DNS:localhost', 'IP:127.0.0.1']);
const listener = hcmListener('tls', [], {
  tls_context: {
    common_tls_context: {
      alpn_protocols: ['h2', 'http/1.1'],
      tls_certificates: [{ certificate_chain: { filename: cert.cert }, private_key: { filename: cert.key } }],
    },
  },
});
const proxy = await startProxyProcess({
  admin: { address: { socket_address: { address: '127.0.0.1', port_value: 0 } } },
  static_resources: { listeners: [listener] },
});
try {
  const port = await proxy.listenerPort('tls');
  const json = join(pki.dir, 'testssl.json');
  try {
    execFileSync(
      testssl,
      [
        '--quiet',
        '--color',
        '0',
        '--warnings',
        'batch',
        '--jsonfile',
        json,
        '-p',
        '-s',
        '-f',
        '-U',
        `127.0.0.1:${port}`,
      ],
      { stdio: ['ignore', 'ignore', 'inherit'], timeout: 600_000 },
    );
  } catch (err) {
    // testssl exits non-zero when it has findings; the JSON file says what they are.
    if (!readFileSync(json, 'utf8')) throw err;
  }
  const findings = JSON.parse(readFileSync(json, 'utf8')) as Finding[];
  const protocols = findings.filter((f) => /^(SSLv|TLS1)/.test(f.id));
  console.log('| check | result |\n| --- | --- |');
  for (const f of protocols) console.log(`| ${f.id} | ${f.finding} |`);
  for (const f of findings.filter((x) => x.id.startsWith('cipherlist_') || x.id === 'FS'))
    console.log(`| ${f.id} | ${f.finding} (${f.severity}) |`);
  const bad = findings.filter((f) => ['LOW', 'MEDIUM', 'HIGH', 'CRITICAL'].includes(f.severity));
  console.log(`\nfindings of severity LOW or worse: ${bad.length}`);
  for (const f of bad) console.log(`- ${f.id} (${f.severity}): ${f.finding}`);
} finally {
  await proxy.stop();
  pki.remove();
}
