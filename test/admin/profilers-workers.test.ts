/**
 * `/cpuprofiler` and `/heapprofiler` with `--concurrency 3`: the traffic runs in the main
 * thread and two workers, so each worker writes its own profile next to `admin.profile_path`.
 */
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { scratchDir } from '../helpers/admin.js';
import { cluster, exchange, tcpListener, tcpServer } from '../helpers/dataplane.js';
import { type ProxyProcess, startProxyProcess } from '../helpers/proxy-process.js';

const scratch = scratchDir();
const profilePath = join(scratch.dir, 'proxy.prof');
let proxy: ProxyProcess;
let port = 0;
const cleanups: Array<() => Promise<void> | void> = [scratch.remove];

before(async () => {
  const upstream = await tcpServer((socket) => {
    socket.on('data', (d: Buffer) => socket.write(d));
    socket.on('end', () => socket.end());
  });
  cleanups.push(upstream.close);
  proxy = await startProxyProcess(
    {
      admin: {
        profile_path: profilePath,
        address: { socket_address: { address: '127.0.0.1', port_value: 0 } },
      },
      static_resources: {
        clusters: [cluster('echo', [upstream.port])],
        listeners: [tcpListener('tcp', { stat_prefix: 'echo', cluster: 'echo' })],
      },
    },
    ['--concurrency', '3'],
  );
  cleanups.push(proxy.stop);
  port = await proxy.listenerPort('tcp');
});

after(async () => {
  for (const c of cleanups.reverse()) await c();
});

/** Connections for about `ms`, several at a time, so every thread serves some. */
async function traffic(ms: number): Promise<void> {
  const end = Date.now() + ms;
  while (Date.now() < end) await Promise.all(Array.from({ length: 8 }, (_, i) => exchange(port, `m${i}`)));
}

interface CpuProfile {
  nodes: Array<{ callFrame: { url: string; functionName: string } }>;
}

test('/cpuprofiler profiles the primary and every worker; they profile the data plane', async () => {
  assert.equal((await proxy.post('/cpuprofiler?enable=y')).body, 'OK\n');
  await traffic(1500);
  assert.equal((await proxy.post('/cpuprofiler?enable=n')).body, 'OK\n');
  const files = [profilePath, `${profilePath}.worker-1`, `${profilePath}.worker-2`];
  const profiles = files.map((f) => JSON.parse(readFileSync(f, 'utf8')) as CpuProfile);
  for (const [i, p] of profiles.entries())
    assert.ok(Array.isArray(p.nodes) && p.nodes.length > 0, String(files[i]));
  const servesTraffic = (p: CpuProfile) => p.nodes.some((n) => /\/src\/dataplane\//.test(n.callFrame.url));
  assert.ok(
    profiles.some((p) => servesTraffic(p)),
    "a thread's profile holds the data plane's frames",
  );
  // Disabling a stopped profiler changes nothing, as in the reference.
  assert.equal((await proxy.post('/cpuprofiler?enable=n')).body, 'OK\n');
});

test('/heapprofiler writes one heap profile per process and says where', async () => {
  assert.equal((await proxy.post('/heapprofiler?enable=y')).body, 'Starting heap profiler\n');
  assert.equal((await proxy.post('/heapprofiler?enable=y')).status, 400);
  await traffic(300);
  const stopped = await proxy.post('/heapprofiler?enable=n');
  assert.equal(stopped.status, 200);
  const files = [profilePath, `${profilePath}.worker-1`, `${profilePath}.worker-2`].map(
    (f) => `${f}.heapprofile`,
  );
  assert.equal(stopped.body, `Heap profiler stopped; profiles written to ${files.join(', ')}\n`);
  for (const f of files) {
    assert.ok(existsSync(f), f);
    assert.ok(JSON.parse(readFileSync(f, 'utf8')).head, f);
  }
  assert.equal((await proxy.post('/heapprofiler?enable=n')).status, 400);
});
