import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { JsonObject, ProxyEvent } from '../../../events/index.js';
import { createClusterManager } from '../../../src/upstream/cluster-manager.js';
import { startDnsDiscovery } from '../../../src/edges/dns/discovery.js';
import { TestDnsServer } from '../../helpers/dns-server.js';
import { loadClusters, upstreamContext } from '../../helpers/upstream.js';

let server: TestDnsServer;
before(async () => {
  server = await TestDnsServer.start();
});
after(() => server.close());

function dnsCluster(name: string, type: string, names: string[], extra: JsonObject = {}): JsonObject {
  return {
    name,
    type,
    dns_refresh_rate: '0.050s',
    dns_lookup_family: 'V4_ONLY',
    dns_resolvers: [{ socket_address: { address: '127.0.0.1', port_value: server.port } }],
    load_assignment: {
      cluster_name: name,
      endpoints: [
        {
          lb_endpoints: names.map((n) => ({
            endpoint: { address: { socket_address: { address: n, port_value: 8080 } } },
          })),
        },
      ],
    },
    ...extra,
  };
}

async function start(cluster: JsonObject) {
  const ctx = upstreamContext();
  const events: ProxyEvent[] = [];
  ctx.store.ingested$.subscribe((env) => events.push(env.event));
  loadClusters(ctx.store, [cluster]);
  // As in the server: discovery is an edge of its own, the manager follows its events.
  const discovery = startDnsDiscovery(ctx);
  const manager = await createClusterManager(ctx);
  const name = cluster.name as string;
  return {
    ctx,
    manager,
    stop() {
      manager.close();
      discovery.close();
    },
    events,
    addresses: () => manager.get(name)?.hosts.map((h) => h.address) ?? [],
    counter: (stat: string) => ctx.stats.counters.get(`cluster.${name}.${stat}`)?.value ?? 0,
  };
}

async function until(what: string, predicate: () => boolean, timeoutMs = 3000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!predicate()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

test('STRICT_DNS: every address of every name is a host, and host lists follow the answers', async () => {
  server.set('a.strict.test', { A: ['10.1.0.1', '10.1.0.2'] });
  server.set('b.strict.test', { A: ['10.2.0.1'] });
  const t = await start(dnsCluster('strict', 'STRICT_DNS', ['a.strict.test', 'b.strict.test']));
  try {
    await until('first resolution', () => t.addresses().length === 3);
    assert.deepEqual(t.addresses(), ['10.1.0.1:8080', '10.1.0.2:8080', '10.2.0.1:8080']);
    assert.equal(t.manager.get('strict')!.hosts[0]!.state.hostname, 'a.strict.test');
    const sets = () => t.events.filter((e) => e.type === 'endpoints/hosts-set').length;
    const attempts = t.counter('update_attempt');
    await until('more refreshes', () => t.counter('update_attempt') >= attempts + 6);
    assert.equal(sets(), 1, 'unchanged answers dispatch nothing');

    server.set('a.strict.test', { A: ['10.1.0.9'] });
    await until('the new answer', () => t.addresses().includes('10.1.0.9:8080'));
    assert.deepEqual(t.addresses(), ['10.1.0.9:8080', '10.2.0.1:8080']);
    assert.equal(sets(), 2);

    server.set('b.strict.test', null);
    const failures = t.counter('update_failure');
    await until('a failure', () => t.counter('update_failure') > failures);
    assert.deepEqual(t.addresses(), ['10.1.0.9:8080', '10.2.0.1:8080'], 'a failing name keeps its hosts');
    assert.ok(t.counter('update_success') > 0);
  } finally {
    t.stop();
  }
});

test('LOGICAL_DNS: one host, the first address; new answers move it', async () => {
  server.set('logical.test', { A: ['10.3.0.1', '10.3.0.2'] });
  const t = await start(dnsCluster('logical', 'LOGICAL_DNS', ['logical.test']));
  try {
    await until('first resolution', () => t.addresses().length === 1);
    assert.deepEqual(t.addresses(), ['10.3.0.1:8080']);
    server.set('logical.test', { A: ['10.3.0.7', '10.3.0.1'] });
    await until('the move', () => t.addresses()[0] === '10.3.0.7:8080');
    assert.equal(t.addresses().length, 1);
  } finally {
    t.stop();
  }
});

test('dns_lookup_family: AUTO takes IPv6 first, V6_ONLY only IPv6', async () => {
  server.set('dual.test', { A: ['10.4.0.1'], AAAA: ['fd00::4'] });
  const auto = await start(dnsCluster('auto', 'STRICT_DNS', ['dual.test'], { dns_lookup_family: 'AUTO' }));
  const v6 = await start(dnsCluster('v6', 'STRICT_DNS', ['dual.test'], { dns_lookup_family: 'V6_ONLY' }));
  try {
    await until('auto', () => auto.addresses().length === 1);
    assert.deepEqual(auto.addresses(), ['[fd00::4]:8080']);
    await until('v6', () => v6.addresses().length === 1);
    assert.deepEqual(v6.addresses(), ['[fd00::4]:8080']);
  } finally {
    auto.stop();
    v6.stop();
  }
});

test('respect_dns_ttl: the record TTL, not dns_refresh_rate, sets the next query', async () => {
  server.set('ttl.test', { A: ['10.5.0.1'], ttl: 1 });
  const t = await start(
    dnsCluster('ttl', 'STRICT_DNS', ['ttl.test'], { dns_refresh_rate: '60s', respect_dns_ttl: true }),
  );
  try {
    await until('first resolution', () => t.addresses().length === 1);
    const first = server.count('ttl.test', 'A');
    await until('a re-query after the 1 s TTL', () => server.count('ttl.test', 'A') > first, 2500);
  } finally {
    t.stop();
  }
});
