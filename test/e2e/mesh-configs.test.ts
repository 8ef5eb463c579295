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
import { root } from '../helpers/bootstrap.js';
import { assertCorpusVerdicts, corpusFiles } from '../helpers/reference-corpus.js';

const corpusDir = join(root, 'fixtures/mesh-configs');

/** The number that validate; raise it when a feature lands (never lower it). */
const VALIDATING_AT_LEAST = 0;

const FIELD = (name: string) => new RegExp(`unknown field '${name}'`);

/**
 * Each file this build refuses, with one field its refusal names. A file listed here that
 * starts to validate is fine (the count says so); one refused but not listed fails the test.
 */
const REFUSALS: Record<string, RegExp> = {
  'consul/access-logs-enabled.yaml': /initial_metadata on xDS streams is not implemented/,
  'consul/defaults.yaml': /initial_metadata on xDS streams is not implemented/,
  'consul/prometheus-metrics.yaml': /initial_metadata on xDS streams is not implemented/,
  'consul/zipkin-tracing-config.yaml': /initial_metadata on xDS streams is not implemented/,
  'envoy-gateway/enable-prometheus.yaml': FIELD('bypass_overload_manager'),
  'envoy-gateway/otel-metrics.yaml': /unknown extension 'envoy\.stat_sinks\.open_telemetry'/,
  'istio/all_golden.json': FIELD('bootstrap_extensions'),
  'istio/default_golden.json': FIELD('bootstrap_extensions'),
  'istio/stats_inclusion_golden.json': FIELD('bootstrap_extensions'),
  'istio/tracing_datadog_golden.json': /unknown extension 'envoy\.tracers\.datadog'/,
  'istio/tracing_zipkin_golden.json': FIELD('bootstrap_extensions'),
  'kuma/bootstrap.universal.golden.yaml': /hds_config: health discovery \(HDS\) is not implemented/,
  'kuma/generator.default-config.golden.yaml': /hds_config: health discovery \(HDS\) is not implemented/,
};

describe('what service meshes generate for their proxies, under --mode validate', () => {
  const files = corpusFiles(corpusDir);

  it('holds each mesh bootstrap with its origin in the README', () => {
    const readme = readFileSync(join(corpusDir, 'README.md'), 'utf8');
    for (const file of files) assert.ok(readme.includes(`\`${file}\``), `README does not list ${file}`);
  });

  it(`validates at least ${VALIDATING_AT_LEAST}; every refusal names its field and is an expected one`, () => {
    assertCorpusVerdicts({
      dir: corpusDir,
      files,
      atLeast: VALIDATING_AT_LEAST,
      refusals: REFUSALS,
    });
  });
});
