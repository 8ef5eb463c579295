/**
 * One TLS config has OpenSSL build its secure context once, though validation, serve's
 * connect options, listener bind and `/certs` each compile it.
 */
import assert from 'node:assert/strict';
import { createRequire, syncBuiltinESMExports } from 'node:module';
import { after, before, test } from 'node:test';
import type * as tls from 'node:tls';
import type { JsonObject } from '../../events/index.js';
import { Report } from '../../src/bootstrap/report.js';
import { compileClusterTls } from '../../src/config/cluster-tls.js';
import { compileListener } from '../../src/config/listener.js';
import { staticSecrets } from '../../src/config/secrets.js';
import { loadedContexts } from '../../src/config/tls-loaded.js';
import { connectOptionsOf } from '../../src/dataplane/pool/connect-options.js';
import { bootstrapOf, loadYaml } from '../helpers/bootstrap.js';
import { cluster, testContext } from '../helpers/dataplane.js';
import { makePki, type TestPki } from '../tls/certs.js';
import { hcmListener } from '../tls/helpers.js';

// The compile step reaches node:tls through its ESM namespace, which follows the CommonJS
// exports only after syncBuiltinESMExports().
const nodeTls = createRequire(import.meta.url)('node:tls') as typeof tls;
const original = nodeTls.createSecureContext;
/** Contexts built with certificates or a CA: the compile step's, not its curve probes. */
let built = 0;
let pki: TestPki;

before(() => {
  pki = makePki();
  nodeTls.createSecureContext = (options?: tls.SecureContextOptions) => {
    if (options?.cert !== undefined || options?.ca !== undefined) built++;
    return original(options);
  };
  syncBuiltinESMExports();
});
after(() => {
  nodeTls.createSecureContext = original;
  syncBuiltinESMExports();
  pki.remove();
});

function tlsContext(cert: string, key: string): JsonObject {
  return {
    common_tls_context: {
      tls_certificates: [{ certificate_chain: { filename: cert }, private_key: { filename: key } }],
      validation_context: { trusted_ca: { filename: pki.ca.cert } },
    },
  };
}

test('a cluster and a listener context compiled at validate, serve, bind and /certs are built once each', async () => {
  const leaf = pki.leaf('proxy', ['DNS:proxy.test']);
  const bootstrap = {
    static_resources: {
      clusters: [cluster('up', [443], { tls_context: tlsContext(leaf.cert, leaf.key) })],
      listeners: [hcmListener('in', [['/', 'up']], { tls_context: tlsContext(leaf.cert, leaf.key) })],
    },
  };
  built = 0;
  const loaded = bootstrapOf(loadYaml(JSON.stringify(bootstrap)));
  assert.equal(built, 2, 'validation builds the two contexts');
  const ctx = testContext(loaded);
  try {
    const state = ctx.store.state;
    const secrets = staticSecrets(state.bootstrap?.config);
    const connect = connectOptionsOf(state.clusters.up?.config, secrets);
    assert.ok(connect.tls);
    const report = new Report('in');
    assert.ok(compileListener(state.listeners.in?.config as JsonObject, '', { report, secrets }).value);
    assert.deepEqual(report.errors, []);
    assert.equal(loadedContexts(state).contexts.length, 2);
    assert.equal(built, 2, 'serve, bind and /certs reuse them');
  } finally {
    await ctx.close();
  }
});

test('a context OpenSSL refuses is built once and refused at every compile, at the path each compile names', () => {
  const a = pki.leaf('a', []);
  const b = pki.leaf('b', []);
  const config: JsonObject = { name: 'c', tls_context: tlsContext(a.cert, b.key) };
  built = 0;
  for (const path of ['first', 'second']) {
    const report = new Report('c');
    compileClusterTls(config, path, report);
    assert.match(
      report.errors.join('\n'),
      new RegExp(`${path}\\.tls_context\\.common_tls_context: TLS context refused by OpenSSL`),
    );
  }
  assert.equal(built, 1);
});
