/**
 * `/cpuprofiler` and `/heapprofiler` with `--concurrency 3`: the traffic runs in the main
 * thread and two workers, so each worker writes its own profile next to `admin.profile_path`.
 */
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { scratchDir } from '../helpers/admin.js';
import { cluster, exchange, tcpListener, tcpServer } from '../helpers/dataplane.js';
import { type ProxyProcess, startProxyProcess } from '../helpers/proxy-process.js';

const scratch = scratchDir();
const profileDir = join(scratch.dir, 'profiles');
const profilePath = join(profileDir, 'proxy.prof');
mkdirSync(profileDir);
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

/**
 * Root cause: stopping the profilers awaited the primary's write first; when it failed (the
 * `profile_path` directory gone, a full or read-only disk) the handler threw, the admin
 * answered `500 internal error`, and the workers were never asked to stop: their profilers ran
 * on, costing CPU on every data-plane thread until the process ended (the next start said
 * `worker 1: already started`). A start did not ask whether the profile could be written at
 * all, as the reference's profiler does when it opens its file. Now every thread stops whatever
 * fails to be written, the answer names the file and why, and a start that could not write is
 * refused naming it.
 */
test('a profile that cannot be written: every profiler still stops, the answer names the file', async () => {
  assert.equal((await proxy.post('/cpuprofiler?enable=y')).body, 'OK\n');
  await traffic(300);
  rmSync(profileDir, { recursive: true });
  const stopped = await proxy.post('/cpuprofiler?enable=n');
  assert.equal(stopped.status, 500);
  assert.match(stopped.body, new RegExp(`^profiler stopped; cannot write ${profilePath}: ENOENT`));
  for (const worker of [1, 2])
    assert.match(stopped.body, new RegExp(`cannot write \\S+\\.worker-${worker}: ENOENT`));

  const refused = await proxy.post('/cpuprofiler?enable=y');
  assert.equal(refused.status, 500);
  assert.equal(
    refused.body,
    `failure to start the profiler: cannot write ${profilePath}: no such file or directory (ENOENT)\n`,
  );
  const heap = await proxy.post('/heapprofiler?enable=y');
  assert.equal(heap.status, 500);
  assert.match(heap.body, /^Fail to start heap profiler: cannot write \S+\.heapprofile: no such file/);
  assert.equal((await proxy.post('/heapprofiler?enable=n')).status, 400, 'nothing was started');

  mkdirSync(profileDir);
  assert.equal((await proxy.post('/cpuprofiler?enable=y')).body, 'OK\n');
  assert.equal((await proxy.post('/cpuprofiler?enable=n')).body, 'OK\n');
  for (const f of [profilePath, `${profilePath}.worker-1`, `${profilePath}.worker-2`])
    assert.ok(existsSync(f), f);
  assert.doesNotMatch(proxy.stderr(), /already started/, 'the workers stopped with the primary');
});
