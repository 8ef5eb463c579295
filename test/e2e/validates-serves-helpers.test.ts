/**
 * What the tests write, serves: every bootstrap a test helper builds passes the compile steps
 * `--mode validate` runs and then serves with every listener bound, so no test exercises a
 * config the proxy itself would refuse without knowing it. Bootstraps written to show something
 * (event-log scenarios, the admin tests' rich config dump) may instead be refused, naming the fields.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { bootstrapLoaded, type JsonObject } from '../../events/index.js';
import { richBootstrap } from '../admin/fixtures.js';
import { adminBootstrap } from '../helpers/admin.js';
import { type Dump, load } from '../helpers/bootstrap.js';
import { hcmWithRoutes, httpBootstrap } from '../helpers/bootstraps.js';
import { cluster, tcpListener } from '../helpers/dataplane.js';
import { bootstrapWith, HTTP_BOOTSTRAP_YAML, cluster as mergeWindowCluster } from '../helpers/event-log.js';
import { SCENARIOS } from '../helpers/event-log-scenarios.js';
import { hcmConfig } from '../helpers/http-dataplane.js';
import { assertRefusedNamingFields, assertServesEveryListener } from '../helpers/serves.js';

/** What `--mode validate` reports for `bootstrap` (in-process: the same loadBootstrap). */
function validate(bootstrap: JsonObject | string) {
  return load({ configYaml: typeof bootstrap === 'string' ? bootstrap : JSON.stringify(bootstrap) });
}

const web = cluster('web', [1]);

/** Bootstraps the helpers build for tests that serve them. */
const serving: Array<[string, JsonObject | string]> = [
  ['helpers/admin adminBootstrap()', adminBootstrap()],
  [
    'helpers/dataplane cluster + tcpListener',
    adminBootstrap({
      static_resources: {
        clusters: [web],
        listeners: [tcpListener('tcp', { stat_prefix: 'tcp', cluster: 'web' })],
      },
    }),
  ],
  [
    'helpers/bootstraps httpBootstrap(hcmWithRoutes)',
    httpBootstrap([web], hcmWithRoutes([{ match: { prefix: '/' }, route: { cluster: 'web' } }])),
  ],
  [
    'helpers/http-dataplane hcmConfig in a listener',
    httpBootstrap(
      [web],
      hcmConfig('web', [{ match: { prefix: '/x' }, direct_response: { status: 204 } }]) as JsonObject,
    ),
  ],
  [
    'helpers/event-log bootstrapWith',
    adminBootstrap(bootstrapWith([mergeWindowCluster('svc', ['127.0.0.1:9', '127.0.0.1:10'], '1s')])),
  ],
  ['helpers/event-log HTTP_BOOTSTRAP_YAML', HTTP_BOOTSTRAP_YAML],
];

/** The bootstrap each event-log scenario opens with. */
const scenarios: Array<[string, JsonObject]> = Object.entries(SCENARIOS).flatMap(([name, steps]) =>
  steps.flatMap(
    ([, , event]): Array<[string, JsonObject]> =>
      bootstrapLoaded.match(event) ? [[`event-log scenario ${name}`, event.bootstrap as JsonObject]] : [],
  ),
);

/** Bootstraps written for what they show rather than to serve: they may be refused, by field. */
const shown: Array<[string, JsonObject]> = [...scenarios, ['admin/fixtures richBootstrap', richBootstrap()]];

// Each case waits mostly on a child process starting; a few at once keep the walk short.
describe('every bootstrap the test helpers write', { concurrency: 4 }, () => {
  for (const [what, bootstrap] of serving) {
    it(`${what}: validates and serves every listener`, async () => {
      const loaded = validate(bootstrap);
      assert.ok(loaded.ok, loaded.ok ? '' : loaded.errors.join('\n'));
      await assertServesEveryListener(loaded.bootstrap as Dump);
    });
  }

  it('event-log scenarios open with at least one bootstrap each', () => {
    assert.equal(scenarios.length, Object.keys(SCENARIOS).length);
  });
  for (const [what, bootstrap] of shown) {
    it(`${what}: refused naming a field, or validates and serves every listener`, async () => {
      const loaded = validate(bootstrap);
      if (!loaded.ok) return assertRefusedNamingFields(loaded.errors, what);
      await assertServesEveryListener(loaded.bootstrap as Dump);
    });
  }
});
