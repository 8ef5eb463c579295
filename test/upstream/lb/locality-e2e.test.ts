/**
 * Zone-aware routing and locality weights end to end: the real `proxy` command with
 * `cluster_manager.local_cluster_name`, a node in zone b moved to zone a by
 * `--service-zone`, and upstreams on loopback in zones a and b. Which zone answered is read
 * from the body. One worker, so each cluster has one balancer and EDF counts are exact; the
 * one draw left to chance (the spill) has bounds whose miss probability is below 1e-9.
 */
import assert from 'node:assert/strict';
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import type { Json, JsonObject } from '../../../events/index.js';
import { hcmWithRoutes, httpListener, LOOPBACK_ADMIN } from '../../helpers/bootstraps.js';
import { type ProxyProcess, startProxyProcess } from '../../helpers/proxy-process.js';

const servers: http.Server[] = [];
/** Ports of the upstreams by zone: a0..a2, b0..b3. */
const ports: Record<string, number[]> = { a: [], b: [] };

function group(zone: string, portList: number[], weight?: number): JsonObject {
  return {
    locality: { region: 'r', zone },
    ...(weight === undefined ? {} : { load_balancing_weight: weight }),
    lb_endpoints: portList.map(
      (port): Json => ({
        endpoint: { address: { socket_address: { address: '127.0.0.1', port_value: port } } },
      }),
    ),
  };
}

function cluster(name: string, groups: JsonObject[], extra: JsonObject = {}): JsonObject {
  return {
    name,
    connect_timeout: '1s',
    load_assignment: { cluster_name: name, endpoints: groups },
    ...extra,
  };
}

function bootstrap(): JsonObject {
  const a = ports.a as number[];
  const b = ports.b as number[];
  return {
    admin: LOOPBACK_ADMIN,
    node: { id: 'n', cluster: 'local', locality: { region: 'r', zone: 'b' } },
    cluster_manager: { local_cluster_name: 'local' },
    static_resources: {
      clusters: [
        // This proxy's own fleet: half in a, half in b (never dialled).
        cluster('local', [group('a', [1, 2]), group('b', [3, 4])]),
        // 3 of 6 in a: at least the local share, so everything stays in a.
        cluster('direct', [group('a', a), group('b', b.slice(0, 3))]),
        // 2 of 6 in a against a local half: two thirds stay, a third crosses to b.
        cluster('spill', [group('a', a.slice(0, 2)), group('b', b)]),
        // 4 hosts, below the default min_cluster_size of 6: no zone routing.
        cluster('small', [group('a', a.slice(0, 2)), group('b', b.slice(0, 2))]),
        cluster('weighted', [group('a', a.slice(0, 1), 1), group('b', b.slice(0, 1), 3)], {
          common_lb_config: { locality_weighted_lb_config: {} },
        }),
      ],
      listeners: [
        httpListener(
          hcmWithRoutes(
            ['direct', 'spill', 'small', 'weighted'].map((c) => ({
              match: { prefix: `/${c}` },
              route: { cluster: c },
            })),
            'in',
          ),
        ),
      ],
    },
  };
}

function get(port: number, path: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const req = http.get({ host: '127.0.0.1', port, path, agent: false, timeout: 5000 }, (res) => {
      let body = '';
      res.on('data', (c) => {
        body += c;
      });
      res.on('end', () => resolve(res.statusCode === 200 ? body : String(res.statusCode)));
    });
    req.on('timeout', () => req.destroy(new Error(`GET ${path} timed out`)));
    req.on('error', reject);
  });
}

describe('zone-aware routing and locality weights through the proxy', () => {
  let proxy: ProxyProcess;
  let port: number;

  before(async () => {
    for (const [zone, count] of [
      ['a', 3],
      ['b', 4],
    ] as const) {
      for (let i = 0; i < count; i++) {
        const server = http.createServer((_req, res) => res.end(zone));
        await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
        ports[zone]?.push((server.address() as AddressInfo).port);
        servers.push(server);
      }
    }
    proxy = await startProxyProcess(bootstrap(), ['--concurrency', '1', '--service-zone', 'a']);
    port = await proxy.listenerPort('http');
  });

  after(async () => {
    await proxy?.stop();
    for (const s of servers) {
      s.closeAllConnections();
      s.close();
    }
  });

  async function zones(path: string, n: number): Promise<Record<string, number>> {
    const out: Record<string, number> = {};
    for (let i = 0; i < n; i++) {
      const zone = await get(port, path);
      out[zone] = (out[zone] ?? 0) + 1;
    }
    return out;
  }

  async function stat(name: string): Promise<number> {
    const body = (await proxy.get(`/stats?filter=^${name.replaceAll('.', '\\.')}$`)).body;
    const m = new RegExp(`^${name}: (\\d+)$`, 'm').exec(body);
    return m ? Number(m[1]) : Number.NaN;
  }

  it('keeps local traffic in the local zone (--service-zone over node.locality)', async () => {
    assert.deepEqual(await zones('/direct', 30), { a: 30 });
    assert.equal(await stat('cluster.direct.lb_zone_routing_all_directly'), 30);
  });

  it('spills to the other zone when the local one is too small for its share', async () => {
    const n = 90;
    const seen = await zones('/spill', n);
    // Expected 60 / 30 (standard deviation 4.5); the bounds are over 6 deviations away.
    assert.ok((seen.a ?? 0) >= 30 && (seen.a ?? 0) <= 88, JSON.stringify(seen));
    assert.equal((seen.a ?? 0) + (seen.b ?? 0), n);
    assert.equal(await stat('cluster.spill.lb_zone_routing_sampled'), seen.a);
    assert.equal(await stat('cluster.spill.lb_zone_routing_cross_zone'), seen.b);
  });

  it('does not route by zone for a cluster below min_cluster_size', async () => {
    const seen = await zones('/small', 40);
    // Round robin over 4 hosts: exactly half each.
    assert.deepEqual(seen, { a: 20, b: 20 });
    assert.equal(await stat('cluster.small.lb_zone_cluster_too_small'), 1);
  });

  it('splits traffic by locality weight (1:3)', async () => {
    assert.deepEqual(await zones('/weighted', 40), { a: 10, b: 30 });
  });
});
