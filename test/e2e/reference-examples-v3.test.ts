/**
 * The reference's current v3 example bootstraps (fixtures/reference-examples-v3: every
 * bootstrap of the envoyproxy/examples sandboxes, and quick-start and filter bootstraps of
 * envoyproxy/envoy's `configs/` and docs), fed unchanged to `--mode validate`: the configs
 * users paste today. It counts how many validate and names every refusal, so a feature that
 * lands raises the floor and a regression shows as a refusal nobody expected.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { root } from '../helpers/bootstrap.js';
import { assertCorpusVerdicts, certificates, corpusFiles } from '../helpers/reference-corpus.js';

const corpusDir = join(root, 'fixtures/reference-examples-v3');

/** The number that validate; raise it when a feature lands (never lower it). */
const VALIDATING_AT_LEAST = 57;

const EXTENSION = (name: string) =>
  new RegExp(`unknown extension '${name.replaceAll('.', '\\.')}'.*not implemented`);
const FIELD = (name: string) => new RegExp(`unknown field '${name}'`);

/**
 * Each file this build refuses, with what the refusal names. A file listed here that starts
 * to validate is fine (the count says so); one refused but not listed fails the test.
 */
const REFUSALS: Record<string, RegExp> = {
  'examples/cache/envoy.yaml': EXTENSION('envoy.filters.http.cache'),
  'examples/datadog-tracing/envoy.yaml': EXTENSION('envoy.tracers.datadog'),
  'examples/golang-http/envoy.yaml': EXTENSION('envoy.filters.http.golang'),
  'examples/golang-network/envoy.yaml': EXTENSION('envoy.filters.network.golang'),
  'examples/kafka/envoy.yaml': EXTENSION('envoy.filters.network.kafka_broker'),
  'examples/kafka-mesh/envoy.yaml': EXTENSION('envoy.filters.network.kafka_mesh'),
  'examples/lua-cluster-specifier/envoy.yaml': FIELD('inline_cluster_specifier_plugin'),
  'examples/redis/envoy.yaml': EXTENSION('envoy.filters.network.redis_proxy'),
  'examples/single-page-app/envoy.yml': EXTENSION('envoy.filters.http.oauth2'),
  'examples/skywalking/envoy-1.yaml': EXTENSION('envoy.tracers.skywalking'),
  'examples/skywalking/envoy-2.yaml': EXTENSION('envoy.tracers.skywalking'),
  'examples/skywalking/envoy-front-proxy.yaml': EXTENSION('envoy.tracers.skywalking'),
  'examples/udp/envoy.yaml': /UDP listeners are not implemented/,
  'examples/wasm-cc/envoy.yaml': EXTENSION('envoy.filters.http.wasm'),
};

/**
 * Files that read certificates relative to the directory they run in (their compose files
 * mount them there): validated in a directory laid out so, with certificates made here.
 */
const LAID_OUT: Record<string, (dir: string) => void> = {
  'envoy/docs/root/start/quick-start/_include/envoy-demo-tls-sni.yaml': certificates(
    'my-service-name.example.com',
    { pairs: [{ cert: 'certs/servercert.pem', key: 'certs/serverkey.pem' }] },
  ),
  'examples/tls-sni/envoy.yaml': certificates('domain.example.com', {
    pairs: [
      { cert: 'certs/domain1.crt.pem', key: 'certs/domain1.key.pem' },
      { cert: 'certs/domain2.crt.pem', key: 'certs/domain2.key.pem' },
    ],
  }),
  'examples/double-proxy/envoy-backend.yaml': certificates('proxy-postgres-backend.example.com', {
    pairs: [{ cert: 'certs/servercert.pem', key: 'certs/serverkey.pem' }],
    ca: ['certs/cacert.pem'],
  }),
  'examples/double-proxy/envoy-frontend.yaml': certificates('proxy-postgres-frontend.example.com', {
    pairs: [{ cert: 'certs/clientcert.pem', key: 'certs/clientkey.pem' }],
    ca: ['certs/cacert.pem'],
  }),
};

describe("the reference's current v3 example bootstraps under --mode validate", () => {
  const files = corpusFiles(corpusDir);

  it('holds every bootstrap its manifest lists with the origin, each in its README', () => {
    const manifest = JSON.parse(readFileSync(join(corpusDir, 'manifest.json'), 'utf8')) as {
      files: Array<{ file: string; repository: string; path: string; commit: string }>;
    };
    const listed = new Set(manifest.files.map((f) => f.file));
    for (const file of files) assert.ok(listed.has(file), `manifest.json does not list ${file}`);
    for (const f of manifest.files) assert.match(f.commit, /^[0-9a-f]{40}$/, f.file);
    const readme = readFileSync(join(corpusDir, 'README.md'), 'utf8');
    for (const file of files) assert.ok(readme.includes(`\`${file}\``), `README does not list ${file}`);
  });

  it(`validates at least ${VALIDATING_AT_LEAST}; every refusal names its field and is an expected one`, () => {
    assertCorpusVerdicts({
      dir: corpusDir,
      files,
      atLeast: VALIDATING_AT_LEAST,
      refusals: REFUSALS,
      laidOut: LAID_OUT,
    });
  });
});
