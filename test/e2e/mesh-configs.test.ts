/**
 * What service meshes generate for their Envoy sidecars and gateways (fixtures/mesh-configs:
 * the golden bootstraps of Istio's pilot-agent, Consul's `connect envoy`, Kuma's kuma-dp and
 * Envoy Gateway), fed to `--mode validate` as a mesh writes them. It counts how many validate
 * and names every refusal, so a feature that lands raises the floor and a regression shows as
 * a refusal nobody expected.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { type Dump, load, root } from '../helpers/bootstrap.js';
import { startProxyProcess } from '../helpers/proxy-process.js';
import { assertCorpusVerdicts, corpusFiles } from '../helpers/reference-corpus.js';
import { onFreePorts } from '../helpers/serves.js';

const corpusDir = join(root, 'fixtures/mesh-configs');

/** The number that validate; raise it when a feature lands (never lower it). */
const VALIDATING_AT_LEAST = 9;

/**
 * Each file this build refuses, with one field its refusal names. A file listed here that
 * starts to validate is fine (the count says so); one refused but not listed fails the test.
 */
const REFUSALS: Record<string, RegExp> = {
  'envoy-gateway/otel-metrics.yaml': /unknown extension 'envoy\.stat_sinks\.open_telemetry'/,
  'istio/tracing_datadog_golden.json': /unknown extension 'envoy\.tracers\.datadog'/,
  'kuma/bootstrap.universal.golden.yaml': /hds_config: health discovery \(HDS\) is not implemented/,
  'kuma/generator.default-config.golden.yaml': /hds_config: health discovery \(HDS\) is not implemented/,
};

describe('what service meshes generate for their proxies, under --mode validate', () => {
  const files = corpusFiles(corpusDir);

  it('holds each mesh bootstrap with its origin in the README', () => {
    const readme = readFileSync(join(corpusDir, 'README.md'), 'utf8');
    for (const file of files) assert.ok(readme.includes(`\`${file}\``), `README does not list ${file}`);
  });

  const verdicts = { validated: [] as string[] };
  it(`validates at least ${VALIDATING_AT_LEAST}; every refusal names its field and is an expected one`, () => {
    verdicts.validated = assertCorpusVerdicts({
      dir: corpusDir,
      files,
      atLeast: VALIDATING_AT_LEAST,
      refusals: REFUSALS,
    }).validated;
  });

  /**
   * A sidecar starts before its control plane answers: each file that validates serves with
   * no management server there (its ports made free, the admin on loopback). It goes LIVE once
   * its initial fetch times out (15 s by default); one whose sources set
   * `initial_fetch_timeout: 0s` (Istio's) waits for its control plane INITIALIZING, as the
   * reference does. Either way its admin answers the probes a mesh points at it.
   */
  it('serves each one that validates with its management server absent: /ready and /stats/prometheus', async () => {
    assert.ok(verdicts.validated.length >= VALIDATING_AT_LEAST);
    // Three at a time: seven proxies started at once on a loaded 2-core machine took over a
    // minute for a 15 s initial fetch timeout.
    const serves = async (file: string) => {
      const loaded = load({ configPath: join(corpusDir, file) });
      assert.ok(loaded.ok, file);
      const bootstrap = loaded.bootstrap as Dump;
      const waits = ['lds_config', 'cds_config'].some(
        (k) => bootstrap.dynamic_resources?.[k]?.initial_fetch_timeout === '0s',
      );
      const proxy = await startProxyProcess(
        onFreePorts(bootstrap),
        ['--concurrency', '1'],
        120_000,
        {},
        [],
        waits ? 'admin' : 'live',
      );
      try {
        const ready = await proxy.get('/ready');
        assert.deepEqual(
          [ready.status, ready.body.trim()],
          waits ? [503, 'INITIALIZING'] : [200, 'LIVE'],
          file,
        );
        const prometheus = await proxy.get('/stats/prometheus');
        assert.equal(prometheus.status, 200, file);
        assert.match(prometheus.body, /^# TYPE \w+server_live gauge$/m, file);
      } finally {
        await proxy.stop();
      }
    };
    for (let i = 0; i < verdicts.validated.length; i += 3)
      await Promise.all(verdicts.validated.slice(i, i + 3).map(serves));
  });
});
