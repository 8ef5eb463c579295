import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startTestAdmin, type TestAdmin } from '../helpers/admin.js';
import { richBootstrap } from './fixtures.js';

const ADMIN = 'type.googleapis.com/envoy.admin.v3.';

describe('/config_dump', () => {
  let admin: TestAdmin;
  // biome-ignore lint/suspicious/noExplicitAny: dumps are free-form JSON walked by the assertions
  const dump = async (query = ''): Promise<any> => {
    const res = await admin.get(`/config_dump${query}`);
    assert.equal(res.status, 200, query);
    assert.equal(res.headers.get('content-type'), 'application/json');
    return res.json();
  };
  before(async () => {
    admin = await startTestAdmin(richBootstrap());
  });
  after(() => admin.close());

  it('lists the top-level dumps in order with last_updated as RFC 3339', async () => {
    const body = await dump();
    assert.deepEqual(
      body.configs.map((c: { '@type': string }) => c['@type']),
      [
        'BootstrapConfigDump',
        'ClustersConfigDump',
        'ListenersConfigDump',
        'ScopedRoutesConfigDump',
        'RoutesConfigDump',
        'SecretsConfigDump',
      ].map((t) => ADMIN + t),
    );
    const [bootstrap, clusters, listeners, , routes, secrets] = body.configs;
    assert.match(bootstrap.last_updated, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{3})?Z$/);
    assert.equal(clusters.version_info, undefined, 'no CDS: no version');
    assert.deepEqual(
      clusters.static_clusters.map((c: { cluster: { name: string } }) => c.cluster.name),
      ['dns', 'web'],
    );
    assert.equal(clusters.static_clusters[0].cluster['@type'], 'type.googleapis.com/envoy.api.v2.Cluster');
    assert.equal(listeners.static_listeners[0].listener.name, 'ingress');
    assert.equal(routes.static_route_configs[0].route_config.name, 'local_route');
    assert.equal(secrets.static_secrets[0].name, 'server_cert');
  });

  it('redacts private keys and passwords, keeping file names', async () => {
    const text = await (await admin.get('/config_dump')).text();
    assert.doesNotMatch(text, /hunter2|BEGIN PRIVATE KEY/);
    const body = JSON.parse(text);
    const secret = body.configs[5].static_secrets[0].secret.tls_certificate;
    assert.deepEqual(secret.private_key, { inline_string: '[redacted]' });
    assert.deepEqual(secret.password, { inline_string: '[redacted]' });
    const tls = body.configs[2].static_listeners[0].listener.filter_chains[0].tls_context.common_tls_context;
    assert.match(tls.tls_certificates[0].private_key.filename, /server-key\.pem$/);
  });

  it('include_eds adds the endpoints dump', async () => {
    const body = await dump('?include_eds');
    const eds = body.configs.find((c: { '@type': string }) => c['@type'] === `${ADMIN}EndpointsConfigDump`);
    const web = eds.static_endpoint_configs.find(
      (e: { endpoint_config: { cluster_name: string } }) => e.endpoint_config.cluster_name === 'web',
    );
    assert.equal(web.endpoint_config.endpoints[0].lb_endpoints.length, 2);
    assert.equal(web.endpoint_config.endpoints[0].lb_endpoints[0].load_balancing_weight, 5);
  });

  it('mask trims every top-level dump, keeping @type', async () => {
    const body = await dump('?mask=static_clusters');
    assert.deepEqual(Object.keys(body.configs[1]), ['@type', 'static_clusters']);
    assert.deepEqual(body.configs[0], { '@type': `${ADMIN}BootstrapConfigDump` });
  });

  it('resource lists the elements of a repeated field, each an Any', async () => {
    const body = await dump('?resource=static_clusters');
    assert.equal(body.configs.length, 2);
    assert.equal(body.configs[0]['@type'], `${ADMIN}ClustersConfigDump.StaticCluster`);
    assert.ok(body.configs[0].last_updated);
  });

  it('resource with mask trims each element', async () => {
    const body = await dump('?resource=static_clusters&mask=cluster.name');
    assert.deepEqual(body, {
      configs: [
        {
          '@type': `${ADMIN}ClustersConfigDump.StaticCluster`,
          cluster: { '@type': 'type.googleapis.com/envoy.api.v2.Cluster', name: 'dns' },
        },
        {
          '@type': `${ADMIN}ClustersConfigDump.StaticCluster`,
          cluster: { '@type': 'type.googleapis.com/envoy.api.v2.Cluster', name: 'web' },
        },
      ],
    });
  });

  it('name_regex keeps matching resources (full match) and combines with resource and mask', async () => {
    const body = await dump('?name_regex=we.*');
    assert.deepEqual(
      body.configs[1].static_clusters.map((c: { cluster: { name: string } }) => c.cluster.name),
      ['web'],
    );
    assert.equal(body.configs[2].static_listeners, undefined, 'listener ingress does not match');
    assert.ok(body.configs[0].bootstrap, 'the bootstrap has no name and is kept');
    const narrowed = await dump('?resource=static_clusters&mask=cluster.name&name_regex=dns');
    assert.deepEqual(
      narrowed.configs.map((c: { cluster: { name: string } }) => c.cluster.name),
      ['dns'],
    );
    assert.equal((await dump('?name_regex=eb')).configs[1].static_clusters, undefined);
  });

  it('answers bad resource and regex values with 400 or 404', async () => {
    const scalar = await admin.get('/config_dump?resource=version_info');
    assert.equal(scalar.status, 400);
    assert.equal(
      await scalar.text(),
      'version_info is not a repeated field. Use ?mask=version_info to get only this field\n',
    );
    const unknown = await admin.get('/config_dump?resource=nope');
    assert.equal(unknown.status, 404);
    assert.equal(await unknown.text(), 'nope not found in config dump\n');
    const regex = await admin.get('/config_dump?name_regex=(');
    assert.equal(regex.status, 400);
    assert.match(await regex.text(), /^invalid name_regex '\('/);
  });
});
