/**
 * The statsd and DogStatsD sinks against real peers on 127.0.0.1: a UDP socket that keeps
 * every datagram, and a TCP server that keeps every byte. Each flush's lines are the
 * reference's: counters as deltas since the last flush, gauges as values, each histogram
 * sample a timer.
 */
import assert from 'node:assert/strict';
import { createSocket } from 'node:dgram';
import { type AddressInfo, createServer, type Socket } from 'node:net';
import { after, describe, it } from 'node:test';
import type { State } from '../../../reducers/index.js';
import type { StatsdSinkSpec } from '../../../src/config/stats-sinks.js';
import { FlushLatch } from '../../../src/stats/sinks/snapshot.js';
import { MAX_BUFFERED_BYTES, type StatsdSinkHost, statsdSink } from '../../../src/stats/sinks/statsd.js';
import { StatsStore } from '../../../src/stats/store.js';
import { TagProducer } from '../../../src/stats/tags.js';

async function until(check: () => boolean, what: () => string, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting: ${what()}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

/** A UDP peer on a free port, keeping every datagram it gets. */
async function udpPeer(): Promise<{ port: number; datagrams: string[]; close(): void }> {
  const socket = createSocket('udp4');
  const datagrams: string[] = [];
  socket.on('message', (m) => datagrams.push(m.toString()));
  await new Promise<void>((r) => socket.bind(0, '127.0.0.1', r));
  return { port: socket.address().port, datagrams, close: () => socket.close() };
}

function host(stats: StatsStore, state: Partial<State> = {}): StatsdSinkHost & { warnings: string[] } {
  const warnings: string[] = [];
  return {
    tags: new TagProducer(),
    state: () => state as State,
    counter: (name) => stats.counter(name),
    warn: (m) => warnings.push(m),
    warnings,
  };
}

function udpSpec(port: number, extra: Partial<StatsdSinkSpec> = {}): StatsdSinkSpec {
  return {
    kind: 'statsd',
    target: { kind: 'udp', ip: '127.0.0.1', port },
    prefix: 'envoy',
    tagged: false,
    maxDatagramBytes: 0,
    ...extra,
  };
}

describe('the statsd sink over UDP', () => {
  const cleanups: Array<() => void> = [];
  after(() => {
    for (const c of cleanups) c();
  });

  it('sends each used counter as its delta, each used gauge, each histogram sample, a datagram each', async () => {
    const peer = await udpPeer();
    cleanups.push(peer.close);
    const stats = new StatsStore();
    const latch = new FlushLatch();
    const sink = statsdSink(udpSpec(peer.port), host(stats));
    cleanups.push(() => sink.close());
    const rq = stats.counter('cluster.web.upstream_rq_total');
    stats.counter('cluster.web.never_counted');
    const active = stats.gauge('cluster.web.upstream_cx_active');
    const time = stats.histogram('cluster.web.upstream_rq_time');
    rq.add(5);
    active.set(3);
    time.record(7);
    time.record(7);
    time.record(140);
    stats.flush();
    sink.flush(latch.snapshot(stats));
    await until(
      () => peer.datagrams.length >= 5,
      () => String(peer.datagrams),
    );
    assert.deepEqual(peer.datagrams.sort(), [
      'envoy.cluster.web.upstream_cx_active:3|g',
      'envoy.cluster.web.upstream_rq_time:140|ms',
      'envoy.cluster.web.upstream_rq_time:7|ms',
      'envoy.cluster.web.upstream_rq_time:7|ms',
      'envoy.cluster.web.upstream_rq_total:5|c',
    ]);

    // the next flush: the delta since this one, no sample of the closed interval again
    peer.datagrams.length = 0;
    rq.add(2);
    stats.resetCounters(); // /reset_counters re-bases /stats only; a sink sees no reset
    rq.inc();
    stats.flush();
    sink.flush(latch.snapshot(stats));
    await until(
      () => peer.datagrams.length >= 2,
      () => String(peer.datagrams),
    );
    await new Promise((r) => setTimeout(r, 50));
    assert.deepEqual(peer.datagrams.sort(), [
      'envoy.cluster.web.upstream_cx_active:3|g',
      'envoy.cluster.web.upstream_rq_total:3|c',
    ]);
  });

  it('dog_statsd: tag-extracted names with the reference tag names, packed up to max_bytes_per_datagram', async () => {
    const peer = await udpPeer();
    cleanups.push(peer.close);
    const stats = new StatsStore();
    const sink = statsdSink(udpSpec(peer.port, { tagged: true, prefix: 'mesh', maxDatagramBytes: 120 }), {
      ...host(stats),
      tags: new TagProducer({}, [{ name: 'zone', value: 'a' }]),
    });
    cleanups.push(() => sink.close());
    for (const name of ['web', 'api', 'db']) stats.counter(`cluster.${name}.upstream_rq_200`).add(2);
    stats.flush();
    sink.flush(new FlushLatch().snapshot(stats));
    await until(
      () => peer.datagrams.join('\n').split('\n').length >= 3,
      () => String(peer.datagrams),
    );
    const lines = peer.datagrams.flatMap((d) => d.split('\n'));
    assert.deepEqual(lines.sort(), [
      'mesh.cluster.upstream_rq:2|c|#zone:a,envoy.response_code:200,envoy.cluster_name:api',
      'mesh.cluster.upstream_rq:2|c|#zone:a,envoy.response_code:200,envoy.cluster_name:db',
      'mesh.cluster.upstream_rq:2|c|#zone:a,envoy.response_code:200,envoy.cluster_name:web',
    ]);
    // each line is 71 bytes: two do not fit in 120, so each datagram holds one
    assert.equal(peer.datagrams.length, 3);
    for (const d of peer.datagrams) assert.ok(Buffer.byteLength(d) <= 120, d);
  });
});

describe('the statsd sink over TCP (tcp_cluster_name)', () => {
  it('writes newline-terminated lines to a member of the cluster, and dials again after the peer hangs up', async () => {
    let received = '';
    const peers: Socket[] = [];
    const server = createServer((socket) => {
      peers.push(socket);
      socket.on('data', (d) => {
        received += d;
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const port = (server.address() as AddressInfo).port;
    const stats = new StatsStore();
    const state = {
      clusters: { statsd: { hosts: [{ ip: '127.0.0.1', port, address: `127.0.0.1:${port}` }] } },
    } as unknown as Partial<State>;
    const latch = new FlushLatch();
    const sink = statsdSink(
      { ...udpSpec(0), target: { kind: 'tcp', cluster: 'statsd' }, prefix: 'p' },
      host(stats, state),
    );
    try {
      stats.counter('a.b').add(4);
      stats.histogram('a.t').record(12);
      stats.flush();
      sink.flush(latch.snapshot(stats));
      await until(
        () => received.split('\n').length >= 3,
        () => JSON.stringify(received),
      );
      assert.equal(received, 'p.a.b:4|c\np.a.t:12|ms\n');
      // the peer goes away: the next flush finds the connection closed and dials anew
      for (const p of peers) p.destroy();
      await new Promise((r) => setTimeout(r, 100));
      received = '';
      stats.counter('a.b').add(1);
      stats.flush();
      sink.flush(latch.snapshot(stats));
      await until(
        () => received.length > 0 && peers.length === 2,
        () => `${JSON.stringify(received)} on ${peers.length} connections`,
      );
      assert.equal(received, 'p.a.b:1|c\n');
    } finally {
      sink.close();
      server.close();
      for (const p of peers) p.destroy();
    }
  });

  it('a peer that never reads: past the buffer limit the connection is closed and statsd.cx_overflow counts', async () => {
    const peers: Socket[] = [];
    const server = createServer((socket) => {
      peers.push(socket);
      socket.pause();
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const port = (server.address() as AddressInfo).port;
    const stats = new StatsStore();
    const state = {
      clusters: { statsd: { hosts: [{ ip: '127.0.0.1', port, address: `127.0.0.1:${port}` }] } },
    } as unknown as Partial<State>;
    const h = host(stats, state);
    const sink = statsdSink({ ...udpSpec(0), target: { kind: 'tcp', cluster: 'statsd' } }, h);
    try {
      // one flush of a large store: far more than the socket buffers hold
      const long = 'x'.repeat(1000);
      for (let i = 0; i < 20_000; i++) stats.counter(`cluster.c${i}.${long}`).inc();
      const latch = new FlushLatch();
      sink.flush(latch.snapshot(stats));
      await new Promise((r) => setTimeout(r, 200));
      sink.flush(latch.snapshot(stats));
      assert.equal(stats.counter('statsd.cx_overflow').value, 1, `${MAX_BUFFERED_BYTES}`);
      assert.match(h.warnings.join('\n'), /not reading/);
    } finally {
      sink.close();
      server.close();
      for (const p of peers) p.destroy();
    }
  });

  it('a cluster with no member drops the flush', () => {
    const stats = new StatsStore();
    const sink = statsdSink(
      { ...udpSpec(0), target: { kind: 'tcp', cluster: 'statsd' } },
      host(stats, { clusters: {} } as unknown as Partial<State>),
    );
    stats.counter('a').inc();
    sink.flush(new FlushLatch().snapshot(stats));
    sink.close();
    assert.equal(stats.counter('statsd.cx_overflow').value, 0);
  });
});
