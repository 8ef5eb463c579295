/**
 * Listener discovery answers only once its listeners are bound, with two data-plane threads
 * (--concurrency 2: the main thread and a worker each bind every listener). Root cause: the
 * bind ran after the response was judged and ACKed, so a listener that could not bind was
 * ACKed, and with threads the first thread's outcome stood for all. The reference binds before
 * it answers: a listener that cannot bind is NACKed with the bind error in `error_detail` and
 * keeps its previous config (a new one is not added).
 */
import assert from 'node:assert/strict';
import * as net from 'node:net';
import { after, before, describe, it } from 'node:test';
import type { JsonObject } from '../../../events/index.js';
import { hcmWithRoutes, httpListener } from '../../helpers/bootstraps.js';
import { type ProxyProcess, startProxyProcess } from '../../helpers/proxy-process.js';
import { ADMIN, GRPC_SOURCE, get, staticCluster, until } from '../../helpers/xds-fixtures.js';
import { XdsServer } from '../../helpers/xds-server.js';

/** A listener on `port` of 127.0.0.1 answering every request with 200 and `body`. */
function answering(name: string, body: string, port = 0): JsonObject {
  const answer = { match: { prefix: '/' }, direct_response: { status: 200, body: { inline_string: body } } };
  return {
    ...httpListener(hcmWithRoutes([answer], name)),
    name,
    address: { socket_address: { address: '127.0.0.1', port_value: port } },
  };
}

/** Each of `n` new connections to `port` answered `body` (the kernel spreads them over both threads' sockets). */
async function everyConnectionAnswers(port: number, body: string, n = 20): Promise<boolean> {
  const answers = await Promise.all(Array.from({ length: n }, () => get(port).catch(() => null)));
  return answers.every((a) => a?.status === 200 && a.body === body);
}

interface DumpedListener {
  name: string;
  active_state?: { version_info: string };
  error_state?: { details: string; version_info: string };
}

describe('listener discovery with two data-plane threads: a listener that cannot bind is NACKed', () => {
  let xds: XdsServer;
  let proxy: ProxyProcess;
  let blocker: net.Server;
  /** A port held by a socket of this test without SO_REUSEPORT: no thread of the proxy can bind it. */
  let taken: number;
  let front: number;

  const dumped = async (name: string): Promise<DumpedListener | undefined> => {
    const dump = JSON.parse((await proxy.get('/config_dump?resource=dynamic_listeners')).body) as {
      configs: DumpedListener[];
    };
    return dump.configs.find((l) => l.name === name);
  };

  before(async () => {
    blocker = net.createServer((socket) => socket.destroy());
    await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
    taken = (blocker.address() as net.AddressInfo).port;
    xds = await XdsServer.start();
    xds.set('lds', [answering('front', 'front')], 'l1');
    proxy = await startProxyProcess(
      {
        admin: ADMIN,
        dynamic_resources: { lds_config: GRPC_SOURCE },
        static_resources: { clusters: [staticCluster('xds_cluster', [xds.port], true)] },
      },
      ['--concurrency', '2', '--drain-time-s', '1'],
    );
    await xds.ack('lds', 'l1');
    front = await proxy.listenerPort('front');
  });

  after(async () => {
    await proxy?.stop();
    await xds?.stop();
    blocker?.close();
  });

  it('a new listener on a taken port: NACK naming the bind error, the listener not added, the others serving', async () => {
    const from = xds.requests.length;
    xds.set('lds', [answering('front', 'front'), answering('busy', 'busy', taken)], 'l2');
    const nack = await xds.nack('lds', 30_000, from);
    assert.equal(nack.version_info, 'l1');
    assert.match(
      nack.error_detail?.message ?? '',
      new RegExp(`listener 'busy': cannot bind 127\\.0\\.0\\.1:${taken}: EADDRINUSE`),
    );
    // The state the NACK left: no `busy` in /listeners, its error in /config_dump.
    assert.doesNotMatch((await proxy.get('/listeners')).body, /busy/);
    const busy = await dumped('busy');
    assert.equal(busy?.active_state, undefined);
    assert.equal(busy?.error_state?.version_info, 'l2');
    assert.ok(await everyConnectionAnswers(front, 'front'));
  });

  it('a listener moved to a taken port: NACK, and it keeps serving where it was in both threads', async () => {
    const from = xds.requests.length;
    xds.set('lds', [answering('front', 'moved', taken)], 'l3');
    const nack = await xds.nack('lds', 30_000, from);
    assert.equal(nack.version_info, 'l1');
    assert.match(nack.error_detail?.message ?? '', /listener 'front': cannot bind .*EADDRINUSE/);
    // Put back with its previous config, on its old socket, in both threads.
    await until(
      'front put back and active',
      async () => (await dumped('front'))?.active_state?.version_info === 'l1',
    );
    assert.equal(await proxy.listenerPort('front'), front);
    assert.ok(await everyConnectionAnswers(front, 'front'));
  });

  it('once the port is free, the same listener is ACKed and served by both threads', async () => {
    await new Promise((resolve) => blocker.close(resolve));
    xds.set('lds', [answering('front', 'front'), answering('busy', 'busy', taken)], 'l4');
    await xds.ack('lds', 'l4', 30_000);
    assert.equal((await dumped('busy'))?.active_state?.version_info, 'l4');
    assert.ok(await everyConnectionAnswers(taken, 'busy'));
    assert.ok(await everyConnectionAnswers(front, 'front'));
  });

  it('after /drain_listeners no listener is added, and a response adding one is answered at once', async () => {
    assert.equal((await proxy.post('/drain_listeners')).status, 200);
    const asked = Date.now();
    xds.set(
      'lds',
      [answering('front', 'front'), answering('busy', 'busy', taken), answering('late', 'late')],
      'l5',
    );
    await xds.ack('lds', 'l5', 10_000);
    // Not the 30 s a bind is waited for: the data plane binds nothing of a drained direction.
    assert.ok(Date.now() - asked < 10_000);
  });
});
