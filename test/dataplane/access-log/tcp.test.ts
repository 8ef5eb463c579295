import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import type { JsonObject } from '../../../events/index.js';
import { flushAccessLogs } from '../../../src/dataplane/access-log/file-sink.js';
import { ListenerManager } from '../../../src/dataplane/listeners/manager.js';
import {
  boundPort,
  closedPort,
  cluster,
  exchange,
  staticClusters,
  tcpListener,
  tcpServer,
  testContext,
} from '../../helpers/dataplane.js';

const dir = mkdtempSync(join(tmpdir(), 'tcp-access-log-'));
const cleanups: Array<() => Promise<void>> = [];
after(async () => {
  for (const c of cleanups.reverse()) await c();
  rmSync(dir, { recursive: true, force: true });
});

const FORMAT =
  '%UPSTREAM_CLUSTER% %UPSTREAM_HOST% %BYTES_RECEIVED% %BYTES_SENT% %RESPONSE_FLAGS% %PROTOCOL% %RESPONSE_CODE% %DOWNSTREAM_REMOTE_ADDRESS_WITHOUT_PORT%\n';

async function proxy(clusters: JsonObject[], tcpProxy: JsonObject, format = FORMAT) {
  const path = join(dir, `${tcpProxy.cluster}.log`);
  const accessLog = {
    name: 'envoy.access_loggers.file',
    typed_config: {
      '@type': 'type.googleapis.com/envoy.config.accesslog.v2.FileAccessLog',
      path,
      format,
    },
  };
  const ctx = testContext({
    static_resources: {
      clusters,
      listeners: [tcpListener('l', { stat_prefix: 'tp', access_log: [accessLog], ...tcpProxy })],
    },
  });
  const manager = new ListenerManager(ctx, staticClusters(ctx));
  await manager.start();
  cleanups.push(async () => {
    await manager.close();
    await ctx.close();
  });
  const lines = async (n: number) => {
    const deadline = Date.now() + 3000;
    for (;;) {
      flushAccessLogs();
      const got = readFileSync(path, 'utf8').split('\n').filter(Boolean);
      if (got.length >= n || Date.now() > deadline) return got;
      await new Promise((r) => setTimeout(r, 20));
    }
  };
  return { port: await boundPort(ctx, 'l'), lines };
}

test('a TCP session logs its cluster, host and bytes each way when it closes', async () => {
  const upstream = await tcpServer((socket) => {
    socket.on('data', () => {});
    socket.on('end', () => socket.end('0123456789'));
  });
  cleanups.push(upstream.close);
  const { port, lines } = await proxy([cluster('echo', [upstream.port])], { cluster: 'echo' });
  const { data } = await exchange(port, 'hello');
  assert.equal(data.toString(), '0123456789');
  assert.deepEqual(await lines(1), [`echo 127.0.0.1:${upstream.port} 5 10 - - 0 127.0.0.1`]);
});

test('UF on a refused connect; URX too once max_connect_attempts are spent', async () => {
  const dead = await closedPort();
  const one = await proxy([cluster('gone', [dead])], { cluster: 'gone' });
  await exchange(one.port, 'x');
  // The byte sent may or may not have been read before the connect failed.
  const [first = ''] = await one.lines(1);
  assert.match(first, new RegExp(`^gone 127\\.0\\.0\\.1:${dead} [01] 0 UF - 0 127\\.0\\.0\\.1$`));
  const two = await proxy([cluster('gone2', [dead])], { cluster: 'gone2', max_connect_attempts: 2 });
  await exchange(two.port, 'x');
  const [second = ''] = await two.lines(1);
  assert.match(second, new RegExp(`^gone2 127\\.0\\.0\\.1:${dead} [01] 0 UF,URX - 0 127\\.0\\.0\\.1$`));
});

test('NR when the cluster does not exist, UH when it has no host', async () => {
  const missing = await proxy([], { cluster: 'nowhere' });
  await exchange(missing.port, 'x');
  assert.deepEqual(await missing.lines(1), ['- - 0 0 NR - 0 127.0.0.1']);
  const empty = await proxy([cluster('empty', [])], { cluster: 'empty' });
  await exchange(empty.port, 'x');
  assert.deepEqual(await empty.lines(1), ['empty - 0 0 UH - 0 127.0.0.1']);
});

test('%UPSTREAM_LOCAL_ADDRESS% is the local end of the upstream connection, as the upstream saw its peer', async () => {
  let peer = '';
  const upstream = await tcpServer((socket) => {
    peer = `${socket.remoteAddress}:${socket.remotePort}`;
    socket.on('data', () => {});
    socket.on('end', () => socket.end('ok'));
  });
  cleanups.push(upstream.close);
  const { port, lines } = await proxy(
    [cluster('local', [upstream.port])],
    { cluster: 'local' },
    '%UPSTREAM_LOCAL_ADDRESS%\n',
  );
  await exchange(port, 'hello');
  assert.match(peer, /^127\.0\.0\.1:\d+$/);
  assert.deepEqual(await lines(1), [peer]);
});
