/**
 * Subset load balancing end to end: the real `proxy` command, four upstreams on loopback
 * with `proxy.lb` / `envoy.lb` endpoint metadata, routes whose `metadata_match` picks a
 * subset, and each fallback policy. Assertions are on which upstreams answered (sets, not
 * shares) and on the cluster's `lb_subsets_*` stats, so nothing depends on chance.
 */
import assert from 'node:assert/strict';
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import type { Json, JsonObject } from '../../../events/index.js';
import { hcmWithRoutes, httpListener, LOOPBACK_ADMIN } from '../../helpers/bootstraps.js';
import { type ProxyProcess, startProxyProcess } from '../../helpers/proxy-process.js';

const NAMES = ['a', 'b', 'c', 'd'] as const;
/** a, b: version v1 (b also a canary); c: version v2 in the legacy namespace; d: no metadata. */
const METADATA: Record<(typeof NAMES)[number], JsonObject | undefined> = {
  a: { 'proxy.lb': { version: 'v1', stage: ['prod'] } },
  b: { 'proxy.lb': { version: 'v1', stage: ['canary', 'prod'] } },
  c: { 'envoy.lb': { version: 'v2' } },
  d: undefined,
};

const servers: http.Server[] = [];
const ports: Record<string, number> = {};

function endpoints(): Json[] {
  return NAMES.map((n) => ({
    endpoint: { address: { socket_address: { address: '127.0.0.1', port_value: ports[n] as number } } },
    ...(METADATA[n] ? { metadata: { filter_metadata: METADATA[n] } } : {}),
  }));
}

function cluster(name: string, subset: JsonObject): JsonObject {
  return {
    name,
    connect_timeout: '1s',
    load_assignment: { cluster_name: name, endpoints: [{ lb_endpoints: endpoints() }] },
    lb_subset_config: subset,
  };
}

const lb = (values: JsonObject) => ({ filter_metadata: { 'proxy.lb': values } });

function route(prefix: string, action: JsonObject): JsonObject {
  return { match: { prefix }, route: action };
}

function bootstrap(): JsonObject {
  const version = [{ keys: ['version'] }];
  return {
    admin: LOOPBACK_ADMIN,
    static_resources: {
      clusters: [
        cluster('nofb', { subset_selectors: version }),
        cluster('any', { subset_selectors: version, fallback_policy: 'ANY_ENDPOINT' }),
        cluster('def', {
          subset_selectors: version,
          fallback_policy: 'DEFAULT_SUBSET',
          default_subset: { version: 'v2' },
        }),
        cluster('stage', {
          fallback_policy: 'ANY_ENDPOINT',
          list_as_any: true,
          subset_selectors: [{ keys: ['stage'], fallback_policy: 'NO_FALLBACK' }, { keys: ['version'] }],
        }),
        cluster('panic', {
          subset_selectors: version,
          fallback_policy: 'DEFAULT_SUBSET',
          default_subset: { version: 'v9' },
          panic_mode_any: true,
        }),
      ],
      listeners: [
        {
          name: 'tcp',
          address: { socket_address: { address: '127.0.0.1', port_value: 0 } },
          filter_chains: [
            {
              filters: [
                {
                  name: 'envoy.tcp_proxy',
                  config: { stat_prefix: 'tcp', cluster: 'nofb', metadata_match: lb({ version: 'v2' }) },
                },
              ],
            },
          ],
        },
        httpListener(
          hcmWithRoutes(
            [
              route('/nofb/v1', { cluster: 'nofb', metadata_match: lb({ version: 'v1' }) }),
              route('/nofb/v3', { cluster: 'nofb', metadata_match: lb({ version: 'v3' }) }),
              route('/nofb/none', { cluster: 'nofb' }),
              route('/any/v3', { cluster: 'any', metadata_match: lb({ version: 'v3' }) }),
              route('/any/v2', {
                cluster: 'any',
                metadata_match: { filter_metadata: { 'envoy.lb': { version: 'v2' } } },
              }),
              route('/def/v3', { cluster: 'def', metadata_match: lb({ version: 'v3' }) }),
              route('/stage/canary', {
                cluster: 'stage',
                metadata_match: lb({ stage: 'canary' }),
              }),
              route('/stage/prod', { cluster: 'stage', metadata_match: lb({ stage: 'prod' }) }),
              route('/stage/beta', { cluster: 'stage', metadata_match: lb({ stage: 'beta' }) }),
              route('/stage/v3', { cluster: 'stage', metadata_match: lb({ version: 'v3' }) }),
              route('/panic/v3', { cluster: 'panic', metadata_match: lb({ version: 'v3' }) }),
              route('/weighted', {
                metadata_match: lb({ version: 'v1' }),
                weighted_clusters: {
                  clusters: [{ name: 'nofb', weight: 100, metadata_match: lb({ version: 'v2' }) }],
                },
              }),
            ],
            'in',
          ),
        ),
      ],
    },
  };
}

function get(port: number, path: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.get({ host: '127.0.0.1', port, path, agent: false, timeout: 5000 }, (res) => {
      let body = '';
      res.on('data', (c) => {
        body += c;
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('timeout', () => req.destroy(new Error(`GET ${path} timed out`)));
    req.on('error', reject);
  });
}

describe('subset load balancing through the proxy', () => {
  let proxy: ProxyProcess;
  let port: number;

  before(async () => {
    for (const name of NAMES) {
      const server = http.createServer((_req, res) => res.end(name));
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      ports[name] = (server.address() as AddressInfo).port;
      servers.push(server);
    }
    proxy = await startProxyProcess(bootstrap());
    port = await proxy.listenerPort('http');
  });

  after(async () => {
    await proxy?.stop();
    for (const s of servers) {
      s.closeAllConnections();
      s.close();
    }
  });

  /** Which upstreams answered `times` requests to `path`, or the statuses when some failed. */
  async function answeredBy(path: string, times = 12): Promise<string> {
    const seen = new Set<string>();
    for (let i = 0; i < times; i++) {
      const res = await get(port, path);
      seen.add(res.status === 200 ? res.body : String(res.status));
    }
    return [...seen].sort().join(',');
  }

  async function stat(name: string): Promise<number> {
    const body = (await proxy.get(`/stats?filter=^${name.replaceAll('.', '\\.')}$`)).body;
    const m = new RegExp(`^${name}: (\\d+)$`, 'm').exec(body);
    return m ? Number(m[1]) : Number.NaN;
  }

  it('a route with metadata_match reaches only the hosts of its subset', async () => {
    assert.equal(await answeredBy('/nofb/v1'), 'a,b');
    assert.equal(await stat('cluster.nofb.lb_subsets_active'), 2, 'subsets version=v1 and version=v2');
    assert.equal(await stat('cluster.nofb.lb_subsets_created'), 2);
    assert.equal(await stat('cluster.nofb.lb_subsets_selected'), 12);
  });

  it('both metadata namespaces count: envoy.lb on the endpoint and on the route', async () => {
    assert.equal(await answeredBy('/any/v2'), 'c');
  });

  it('NO_FALLBACK: no subset, or no criteria at all, is no healthy upstream', async () => {
    assert.equal(await answeredBy('/nofb/v3', 3), '503');
    assert.equal(await answeredBy('/nofb/none', 3), '503');
    assert.equal(await stat('cluster.nofb.lb_subsets_fallback'), 0);
  });

  it('ANY_ENDPOINT: a missing subset falls back to every host', async () => {
    assert.equal(await answeredBy('/any/v3'), 'a,b,c,d');
    assert.equal(await stat('cluster.any.lb_subsets_fallback'), 12);
  });

  it('DEFAULT_SUBSET: a missing subset falls back to the hosts matching default_subset', async () => {
    assert.equal(await answeredBy('/def/v3'), 'c');
    assert.equal(await stat('cluster.def.lb_subsets_fallback'), 12);
  });

  it('list_as_any puts a host in a subset per list element; a selector NO_FALLBACK overrides ANY_ENDPOINT', async () => {
    assert.equal(await answeredBy('/stage/canary'), 'b');
    assert.equal(await answeredBy('/stage/prod'), 'a,b');
    assert.equal(await answeredBy('/stage/beta', 3), '503', 'the stage selector says NO_FALLBACK');
    assert.equal(
      await answeredBy('/stage/v3'),
      'a,b,c,d',
      'the version selector keeps the cluster ANY_ENDPOINT',
    );
    // stage=prod, stage=canary, version=v1, version=v2.
    assert.equal(await stat('cluster.stage.lb_subsets_active'), 4);
  });

  it('panic_mode_any: a default subset matching nothing still finds a host', async () => {
    // The panic pick is uniform over the cluster: which hosts answer is chance, that one does is not.
    const answered = (await answeredBy('/panic/v3')).split(',');
    assert.ok(
      answered.every((n) => (NAMES as readonly string[]).includes(n)),
      answered.join(','),
    );
    assert.equal(await stat('cluster.panic.lb_subsets_fallback_panic'), 12);
  });

  it("the TCP proxy's metadata_match picks the subset too", async () => {
    const tcpPort = await proxy.listenerPort('tcp');
    for (let i = 0; i < 4; i++) assert.deepEqual(await get(tcpPort, '/'), { status: 200, body: 'c' });
  });

  it("a weighted cluster's metadata_match overrides the route's key by key", async () => {
    assert.equal(await answeredBy('/weighted'), 'c');
  });
});
