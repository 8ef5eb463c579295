/**
 * `/memory` with `--concurrency 2`: the reference's six fields stay the primary's at the top
 * level, and `workers` holds each data-plane process's own figures; in-process there is no
 * `workers` field.
 */
import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import type { JsonObject } from '../../events/index.js';
import { cluster, tcpListener, tcpServer } from '../helpers/dataplane.js';
import { type ProxyProcess, startProxyProcess } from '../helpers/proxy-process.js';

const FIELDS = [
  'allocated',
  'heap_size',
  'pageheap_unmapped',
  'pageheap_free',
  'total_thread_cache',
  'total_physical_bytes',
];

const cleanups: Array<() => Promise<void> | void> = [];

after(async () => {
  for (const c of cleanups.reverse()) await c();
});

async function start(concurrency: string): Promise<ProxyProcess> {
  const upstream = await tcpServer((socket) => socket.end());
  cleanups.push(upstream.close);
  const proxy = await startProxyProcess(
    {
      admin: { address: { socket_address: { address: '127.0.0.1', port_value: 0 } } },
      static_resources: {
        clusters: [cluster('up', [upstream.port])],
        listeners: [tcpListener('tcp', { stat_prefix: 'tcp', cluster: 'up' })],
      },
    },
    ['--concurrency', concurrency],
  );
  cleanups.push(proxy.stop);
  return proxy;
}

function assertFigures(figures: JsonObject, who: string): void {
  for (const f of FIELDS) assert.match(String(figures[f]), /^\d+$/, `${who} ${f}`);
  assert.ok(Number(figures.total_physical_bytes) > 1_000_000, `${who} has a resident set`);
  assert.ok(Number(figures.allocated) > 0, `${who} allocated`);
}

test('/memory with workers: the primary at the top level, each worker in `workers`', async () => {
  // --concurrency 3: the main thread serves too, beside workers 1 and 2.
  const proxy = await start('3');
  const { status, body } = await proxy.get('/memory');
  assert.equal(status, 200);
  const memory = JSON.parse(body) as JsonObject & { workers: JsonObject[] };
  assert.deepEqual(Object.keys(memory), [...FIELDS, 'workers']);
  assertFigures(memory, 'primary');
  assert.deepEqual(
    memory.workers.map((w) => w.worker_id),
    ['1', '2'],
  );
  for (const w of memory.workers) {
    assert.deepEqual(Object.keys(w), ['worker_id', ...FIELDS]);
    assertFigures(w, `worker ${String(w.worker_id)}`);
  }
});

test('/memory in-process keeps the reference fields only', async () => {
  const proxy = await start('1');
  const memory = JSON.parse((await proxy.get('/memory')).body) as JsonObject;
  assert.deepEqual(Object.keys(memory), FIELDS);
  assertFigures(memory, 'process');
});
