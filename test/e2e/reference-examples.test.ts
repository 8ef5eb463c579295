/**
 * The reference's own example bootstraps of 2020 (fixtures/reference-examples-2020: every
 * bootstrap of its `examples/` and `configs/` at v1.16), fed unchanged to `--mode validate`.
 * Issue 29 measured 20 of 40; this counts how many validate now and names every refusal, so a
 * feature that lands raises the floor and a regression shows as a refusal nobody expected.
 */
import assert from 'node:assert/strict';
import { copyFileSync, mkdirSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { scratchDir } from '../helpers/admin.js';
import { load, root, runCli } from '../helpers/bootstrap.js';
import { assertRefusedNamingFields } from '../helpers/serves.js';
import { makePki } from '../tls/certs.js';

const corpusDir = join(root, 'fixtures/reference-examples-2020');

/** The number of the 40 that validate; raise it when a feature lands (never lower it). */
const VALIDATING_AT_LEAST = 31;

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
  'examples/mysql/envoy.yaml': /unknown extension 'envoy\.filters\.network\.mysql_proxy'/,
  'examples/redis/envoy.yaml': /unknown extension 'envoy\.filters\.network\.redis_proxy'/,
  'examples/wasm/envoy.yaml': /envoy\.filters\.http\.wasm/,
};

/**
 * Files that read others relative to the directory they run in, and how their image lays that
 * directory out: `ci/Dockerfile-envoy-google-vrp` runs the edge config in /etc/envoy with the
 * test certificates in certs/. They are validated there (certificates made here), the file unchanged.
 */
const LAID_OUT: Record<string, (dir: string) => void> = {
  'configs/google-vrp/envoy-edge.yaml': (dir) => {
    const pki = makePki();
    try {
      const leaf = pki.leaf('example.com', ['DNS:example.com']);
      mkdirSync(join(dir, 'certs'));
      copyFileSync(leaf.cert, join(dir, 'certs/servercert.pem'));
      copyFileSync(leaf.key, join(dir, 'certs/serverkey.pem'));
    } finally {
      pki.remove();
    }
  },
};

/** `load` run in `dir` (laid out first), as `--mode validate` run there would. */
function loadIn(file: string, layOut: (dir: string) => void): ReturnType<typeof load> {
  const scratch = scratchDir();
  const cwd = process.cwd();
  try {
    layOut(scratch.dir);
    // load is synchronous: nothing else runs while the process is in the scratch directory.
    process.chdir(scratch.dir);
    return load({ configPath: join(corpusDir, file) });
  } finally {
    process.chdir(cwd);
    scratch.remove();
  }
}

/** Every bootstrap of the corpus, as paths relative to its folder. */
function corpus(dir = corpusDir, prefix = ''): string[] {
  return readdirSync(dir)
    .sort()
    .flatMap((name) => {
      const path = join(dir, name);
      if (statSync(path).isDirectory()) return corpus(path, `${prefix}${name}/`);
      return /\.(yaml|json)$/.test(name) ? [`${prefix}${name}`] : [];
    });
}

describe("the reference's 2020 example bootstraps under --mode validate", () => {
  const files = corpus();

  it('holds the 40 bootstraps of examples/ and configs/, each listed in its README', () => {
    assert.equal(files.length, 40, files.join('\n'));
    const readme = readFileSync(join(corpusDir, 'README.md'), 'utf8');
    for (const file of files) assert.ok(readme.includes(`\`${file}\``), `README does not list ${file}`);
  });

  it(`validates at least ${VALIDATING_AT_LEAST}; every refusal names its field and is an expected one`, () => {
    const validated: string[] = [];
    const refused: string[] = [];
    for (const file of files) {
      // In-process, the function `--mode validate` runs; its errors are the lines it prints.
      const layOut = LAID_OUT[file];
      const loaded =
        layOut === undefined ? load({ configPath: join(corpusDir, file) }) : loadIn(file, layOut);
      if (loaded.ok) {
        validated.push(file);
        continue;
      }
      refused.push(file);
      assertRefusedNamingFields(loaded.errors, file);
      const expected = REFUSALS[file];
      assert.ok(expected, `${file} is refused, which nobody expected:\n${loaded.errors.join('\n')}`);
      assert.match(loaded.errors.join('\n'), expected, file);
    }
    assert.ok(
      validated.length >= VALIDATING_AT_LEAST,
      `${validated.length} of ${files.length} validate; refused:\n${refused.join('\n')}`,
    );
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
