/**
 * The reference's own example bootstraps of 2020 (fixtures/reference-examples-2020: every
 * bootstrap of its `examples/` and `configs/` at v1.16), fed unchanged to `--mode validate`.
 * Issue 29 measured 20 of 40; this counts how many validate now and names every refusal, so a
 * feature that lands raises the floor and a regression shows as a refusal nobody expected.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { root, runCli } from '../helpers/bootstrap.js';
import { assertCorpusVerdicts, certificates, corpusFiles } from '../helpers/reference-corpus.js';

const corpusDir = join(root, 'fixtures/reference-examples-2020');

/** The number of the 40 that validate; raise it when a feature lands (never lower it). */
const VALIDATING_AT_LEAST = 32;

/**
 * Each file this build refuses, with what the refusal names. A file listed here that starts
 * to validate is fine (the count says so); one refused but not listed fails the test.
 */
const REFUSALS: Record<string, RegExp> = {
  'configs/encapsulate_in_connect.v3.yaml': /typed_config\.tunneling_config: TcpProxy\.tunneling_config/,
  'configs/terminate_connect.v3.yaml': /upgrade_type: CONNECT tunnels are not implemented/,
  'examples/cache/front-envoy.yaml': /unknown extension 'envoy\.filters\.http\.cache'/,
  'examples/jaeger-native-tracing/front-envoy-jaeger.yaml': /unknown extension 'envoy\.tracers\.dynamic_ot'/,
  'examples/jaeger-native-tracing/service1-envoy-jaeger.yaml':
    /unknown extension 'envoy\.tracers\.dynamic_ot'/,
  'examples/jaeger-native-tracing/service2-envoy-jaeger.yaml':
    /unknown extension 'envoy\.tracers\.dynamic_ot'/,
  'examples/redis/envoy.yaml': /unknown extension 'envoy\.filters\.network\.redis_proxy'/,
  'examples/wasm/envoy.yaml': /envoy\.filters\.http\.wasm/,
};

/**
 * Files that read others relative to the directory they run in, and how their image lays that
 * directory out: `ci/Dockerfile-envoy-google-vrp` runs the edge config in /etc/envoy with the
 * test certificates in certs/. They are validated there (certificates made here), the file unchanged.
 */
const LAID_OUT: Record<string, (dir: string) => void> = {
  'configs/google-vrp/envoy-edge.yaml': certificates('example.com', {
    pairs: [{ cert: 'certs/servercert.pem', key: 'certs/serverkey.pem' }],
  }),
};

describe("the reference's 2020 example bootstraps under --mode validate", () => {
  const files = corpusFiles(corpusDir);

  it('holds the 40 bootstraps of examples/ and configs/, each listed in its README', () => {
    assert.equal(files.length, 40, files.join('\n'));
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

  it('validates a bootstrap whose hosts are docker service names without resolving them', async () => {
    // front-proxy's clusters are STRICT_DNS on `service1` and `service2`, names only its compose
    // network has: validation checks the config and never asks DNS.
    const out = await runCli([
      '--mode',
      'validate',
      '-c',
      join(corpusDir, 'examples/front-proxy/front-envoy.yaml'),
    ]);
    assert.equal(out.status, 0, out.stderr);
    const refused = await runCli(['--mode', 'validate', '-c', join(corpusDir, 'examples/redis/envoy.yaml')]);
    assert.equal(refused.status, 1);
    assert.match(
      refused.stderr,
      /filters\[0\]\.name: unknown extension 'envoy\.filters\.network\.redis_proxy'/,
    );
  });
});
