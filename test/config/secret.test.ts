/**
 * The Secret's compile step returns what the TLS contexts naming the secret act on. Root cause
 * of the test: `compileSecret` returned nothing, so a context naming a secret (static, or from
 * SDS) read the secret's JSON and loaded its certificate, key and CA again. Now the context
 * reads the value the step compiled, kept by the secret's identity.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import fc from 'fast-check';
import type { JsonObject } from '../../events/index.js';
import { Report } from '../../src/bootstrap/report.js';
import { compiledSecret, compileSecret } from '../../src/config/secret.js';
import type { Secrets } from '../../src/config/secrets.js';
import { compileUpstreamTls } from '../../src/config/tls-context.js';
import { makePki, type TestPki } from '../tls/certs.js';

let pki: TestPki;
let leafPem = { certPem: '', keyPem: '' };

before(() => {
  pki = makePki();
  leafPem = pki.leaf('workload', ['DNS:workload.test']);
});
after(() => pki.remove());

function secret(name: string): JsonObject {
  return {
    name,
    tls_certificate: {
      certificate_chain: { inline_string: leafPem.certPem },
      private_key: { inline_string: leafPem.keyPem },
    },
    validation_context: {
      trusted_ca: { filename: pki.ca.cert },
      match_subject_alt_names: [{ exact: 'upstream.test' }],
    },
  };
}

/** An UpstreamTlsContext naming `name` for its certificate and its validation context. */
function naming(name: string, discovered: boolean): JsonObject {
  const ref: JsonObject = discovered ? { name, sds_config: { ads: {} } } : { name };
  return {
    common_tls_context: {
      tls_certificate_sds_secret_configs: [ref],
      validation_context_sds_secret_config: ref,
    },
  };
}

const staticOnes = (...list: JsonObject[]): Secrets => ({
  static: new Map(list.map((s) => [String(s.name), s])),
  dynamic: null,
});
const discoveredOnes = (...list: JsonObject[]): Secrets => ({
  static: new Map(),
  dynamic: new Map(list.map((s) => [String(s.name), s])),
});

test('a secret compiles to its certificate, key and validation context, once per secret object', () => {
  const raw = secret('workload');
  const { value, findings } = compileSecret(raw, '');
  assert.equal(findings.failed, false, findings.errors.join('\n'));
  assert.equal(value.certificate?.cert.toString(), leafPem.certPem);
  assert.equal(value.certificate?.key.pem.toString(), leafPem.keyPem);
  assert.match(value.certificate?.first?.cert.subject ?? '', /CN=workload/);
  assert.equal(value.validation?.peer.verifyChain, true);
  assert.equal(value.validation?.peer.san.length, 1);
  assert.equal(value.validation?.caCerts.length, 1);
  assert.ok(Buffer.isBuffer(value.validation?.secure.ca));
  assert.equal(compileSecret(raw, '').value, value, 'the same secret object compiles once');
  assert.notEqual(compileSecret(secret('workload'), '').value, value, 'a new secret object compiles anew');
});

test('a TLS context naming a discovered or a static secret acts on the value its compile step made', () => {
  for (const discovered of [true, false]) {
    const raw = secret('workload');
    const { value } = compileSecret(raw, '');
    const report = new Report('test');
    const secrets = discovered ? discoveredOnes(raw) : staticOnes(raw);
    const tls = compileUpstreamTls(naming('workload', discovered), 'ctx', report, secrets);
    assert.equal(report.failed, false, report.errors.join('\n'));
    assert.equal(tls.certChains[0], value.certificate?.first, 'the certificate the step loaded');
    assert.equal(tls.caCerts[0], value.validation?.caCerts[0], 'the CA the step loaded');
    assert.equal(tls.peer, value.validation?.peer, 'the peer checks the step compiled');
    assert.deepEqual(tls.secretsUsed, [raw, raw]);
    assert.deepEqual(tls.pending, []);
  }
});

test("a static secret's findings are reported where a context names it, under the field it names only", () => {
  const raw: JsonObject = {
    name: 's',
    tls_certificate: {
      certificate_chain: { filename: '/nonexistent/chain.pem' },
      private_key: { filename: '/nonexistent/key.pem' },
    },
    validation_context: { verify_certificate_hash: ['not-a-hash'] },
  };
  const context = { common_tls_context: { tls_certificate_sds_secret_configs: [{ name: 's' }] } };
  for (const path of ['first', 'second']) {
    const report = new Report('test');
    compileUpstreamTls(context, path, report, staticOnes(raw));
    assert.deepEqual(
      report.problems.map((p) => p.path),
      [
        "static_resources.secrets['s'].tls_certificate.certificate_chain.filename",
        "static_resources.secrets['s'].tls_certificate.private_key.filename",
      ],
      'each context naming it is told, and of tls_certificate only',
    );
  }
  const whole = compileSecret(raw, 'static_resources.secrets[0]').findings;
  assert.deepEqual(
    whole.problems.map((p) => p.path),
    [
      'static_resources.secrets[0].tls_certificate.certificate_chain.filename',
      'static_resources.secrets[0].tls_certificate.private_key.filename',
      'static_resources.secrets[0].validation_context.verify_certificate_hash[0]',
    ],
  );
});

test("a combined validation context compiles the secret's message merged over its default, its findings once", () => {
  const raw: JsonObject = { name: 'trust', validation_context: { verify_certificate_hash: ['bad'] } };
  const report = new Report('test');
  const tls = compileUpstreamTls(
    {
      common_tls_context: {
        combined_validation_context: {
          default_validation_context: { trusted_ca: { filename: pki.ca.cert } },
          validation_context_sds_secret_config: { name: 'trust' },
        },
      },
    },
    'ctx',
    report,
    staticOnes(raw),
  );
  assert.deepEqual(
    report.problems.map((p) => p.path),
    ['ctx.common_tls_context.combined_validation_context.verify_certificate_hash[0]'],
  );
  assert.equal(tls.peer.verifyChain, true, "the default's CA stays");
  assert.deepEqual(tls.peer.hashes, ['bad']);
});

test('a malformed secret is refused naming each field, and nothing is thrown', () => {
  const { value, findings } = compileSecret(
    { name: 'x', tls_certificate: 'a string', validation_context: [1], generic_secret: {}, what: 1 },
    'secret',
  );
  assert.deepEqual(findings.problems.map((p) => p.path).sort(), [
    'secret.generic_secret',
    'secret.tls_certificate.certificate_chain',
    'secret.tls_certificate.private_key',
    'secret.what',
  ]);
  assert.equal(value.certificate, null, 'present, not loaded');
  assert.ok(value.validation, 'present: an empty validation context');
  const unnamed = compileSecret({}, '').findings;
  assert.deepEqual(
    unnamed.problems.map((p) => p.path),
    ['name'],
  );
  assert.deepEqual(
    compiledSecret({ name: 'v' }, 'tls_certificate', 'b', null),
    {},
    'no field: none in the value',
  );
});

test('any JSON a control plane sends as a secret compiles to findings, never a throw', () => {
  const json = fc.jsonValue({ maxDepth: 3 });
  const field = fc.oneof(
    json,
    fc.record({ certificate_chain: json, private_key: json, password: json }, { requiredKeys: [] }),
    fc.record({ trusted_ca: json, crl: json, verify_certificate_hash: json }, { requiredKeys: [] }),
  );
  fc.assert(
    fc.property(
      fc.record(
        { name: json, tls_certificate: field, validation_context: field, session_ticket_keys: json },
        { requiredKeys: [] },
      ),
      (raw) => {
        const { value, findings } = compileSecret(raw as JsonObject, '');
        assert.equal(value.certificate === undefined, raw.tls_certificate === undefined);
        assert.equal(value.validation === undefined, raw.validation_context === undefined);
        if (raw.tls_certificate !== undefined && value.certificate === null) assert.ok(findings.failed);
      },
    ),
    { seed: 2626, numRuns: Number(process.env.FUZZ_RUNS ?? 300) },
  );
});
