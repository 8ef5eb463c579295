import assert from 'node:assert/strict';
import * as http from 'node:http';
import * as http2 from 'node:http2';
import * as net from 'node:net';
import { after, before, test } from 'node:test';
import { canonicalMessage } from '../../../src/bootstrap/canonical.js';
import { CONFIG_TYPE } from '../../../src/bootstrap/extensions.js';
import { Report } from '../../../src/bootstrap/report.js';
import { messageType } from '../../../src/bootstrap/schema.js';
import { DEFAULT_FLOOD_LIMITS } from '../../../src/dataplane/codec/h2/limits.js';
import { compileHcm, type HcmSpec } from '../../../src/dataplane/http/hcm-config.js';
import { settle } from '../../helpers/dataplane.js';
import { frame, PREFACE } from '../../helpers/h2-frames.js';
import { hcmConfig, startProxy, type TestProxy, withTestProxy } from '../../helpers/http-dataplane.js';

// The HCM's http2_protocol_options was refused: the edge best-practice bootstrap sets its
// stream limit and windows. The four SETTINGS-level fields act on the node:http2 codec
// (SETTINGS frame, and a WINDOW_UPDATE for the connection window); the rest refuse by name.

let upstream: http.Server;
let upPort = 0;
/** Requests the upstream holds at once, and the most it ever held. */
let inFlight = 0;
let maxInFlight = 0;
let seen = 0;

before(async () => {
  upstream = http.createServer((req, res) => {
    seen += 1;
    inFlight += 1;
    maxInFlight = Math.max(maxInFlight, inFlight);
    req.resume();
    setTimeout(() => {
      inFlight -= 1;
      res.end('ok');
    }, 150);
  });
  await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
  upPort = (upstream.address() as net.AddressInfo).port;
});

after(() => {
  upstream.close();
  upstream.closeAllConnections();
});

async function withProxy(h2: Record<string, unknown> | null, run: (proxy: TestProxy) => Promise<void>) {
  const config = { ...hcmConfig('b'), codec_type: 'HTTP2', ...(h2 ? { http2_protocol_options: h2 } : {}) };
  await withTestProxy(config, [{ raw: { name: 'b' }, addresses: [`127.0.0.1:${upPort}`] }], (proxy) => {
    inFlight = maxInFlight = seen = 0;
    return run(proxy);
  });
}

/** Compiles an HCM with these `http2_protocol_options` as the loader does (canonical form first). */
function compileWith(h2: Record<string, unknown> | null): { report: Report; spec: HcmSpec } {
  const report = new Report('t');
  const ctx = { report, allowUnknown: false, disabled: new Set<string>() };
  const raw = { ...hcmConfig('b'), ...(h2 ? { http2_protocol_options: h2 } : {}) };
  const canonical = canonicalMessage(raw, messageType(CONFIG_TYPE.httpConnectionManager), 'hcm', ctx) ?? {};
  return { report, spec: compileHcm(canonical, 'hcm', report) };
}

const findings = (h2: Record<string, unknown>) => compileWith(h2).report;

test('compile: the four settings in their bounds, unset ones left to the codec, the rest refused by name', () => {
  const defaults = DEFAULT_FLOOD_LIMITS;
  const ok = compileWith({
    hpack_table_size: 0,
    max_concurrent_streams: 100,
    initial_stream_window_size: 65536,
    initial_connection_window_size: 1048576,
  });
  assert.deepEqual(ok.report.problems, []);
  // A wrapper keeps its 0: hpack_table_size 0 is set (no dynamic table), not dropped as a default.
  assert.deepEqual(ok.spec.http2, {
    settings: { headerTableSize: 0, maxConcurrentStreams: 100, initialWindowSize: 65536 },
    connectionWindowSize: 1048576,
    streamErrorOnInvalidMessaging: false,
    limits: defaults,
    keepalive: null,
  });
  assert.deepEqual(compileWith(null).spec.http2, {
    settings: {},
    connectionWindowSize: null,
    streamErrorOnInvalidMessaging: false,
    limits: defaults,
    keepalive: null,
  });
  const bounds = findings({ max_concurrent_streams: 0, initial_stream_window_size: 1000 });
  assert.deepEqual(
    bounds.problems.map((p) => p.path),
    [
      'hcm.http2_protocol_options.max_concurrent_streams',
      'hcm.http2_protocol_options.initial_stream_window_size',
    ],
  );
  const big = findings({ initial_connection_window_size: 2 ** 31 });
  assert.deepEqual(
    big.problems.map((p) => p.path),
    ['hcm.http2_protocol_options.initial_connection_window_size'],
  );
  const refused = findings({ allow_connect: true });
  assert.deepEqual(
    refused.problems.map((p) => [p.path, p.message.replace(/ \(not supported by this build\)$/, '')]),
    [['hcm.http2_protocol_options.allow_connect', 'CONNECT over HTTP/2 (allow_connect) is not implemented']],
  );
});

test('compile: the five flood limits act on the connection manager, the reference defaults where unset', () => {
  const floods = compileWith({
    max_outbound_frames: 5,
    max_outbound_control_frames: 6,
    max_consecutive_inbound_frames_with_empty_payload: 0,
    max_inbound_priority_frames_per_stream: 7,
    max_inbound_window_update_frames_per_data_frame_sent: 8,
  });
  assert.deepEqual(floods.report.problems, []);
  assert.deepEqual(floods.spec.http2.limits, {
    maxOutboundFrames: 5,
    maxOutboundControlFrames: 6,
    maxConsecutiveInboundFramesWithEmptyPayload: 0,
    maxInboundPriorityFramesPerStream: 7,
    maxInboundWindowUpdateFramesPerDataFrameSent: 8,
  });
  // The reference's minimum of 1 for the outbound and WINDOW_UPDATE limits.
  assert.deepEqual(
    findings({ max_outbound_frames: 0 }).problems.map((p) => p.path),
    ['hcm.http2_protocol_options.max_outbound_frames'],
  );
});

test('a node:http2 client receives the configured SETTINGS and connection window', async () => {
  const h2 = {
    hpack_table_size: 1024,
    max_concurrent_streams: 7,
    initial_stream_window_size: 131072,
    initial_connection_window_size: 1048576,
  };
  await withProxy(h2, async (proxy) => {
    const client = http2.connect(`http://127.0.0.1:${proxy.port}`);
    try {
      const settings = await new Promise<http2.Settings>((resolve, reject) => {
        client.once('remoteSettings', resolve);
        client.once('error', reject);
        setTimeout(() => reject(new Error('no SETTINGS within 2 s')), 2000).unref();
      });
      assert.equal(settings.headerTableSize, 1024);
      assert.equal(settings.maxConcurrentStreams, 7);
      assert.equal(settings.initialWindowSize, 131072);
      // The connection window is not a setting: a WINDOW_UPDATE on stream 0 raises it.
      assert.equal(await settle(() => client.state.remoteWindowSize, 1048576, 2000), 1048576);
    } finally {
      client.close();
    }
  });
});

/** Five requests at once on one session; resolves with their statuses. */
async function fiveAtOnce(port: number): Promise<number[]> {
  const client = http2.connect(`http://127.0.0.1:${port}`);
  try {
    await new Promise((resolve) => client.once('remoteSettings', resolve));
    const one = () =>
      new Promise<number>((resolve, reject) => {
        const s = client.request({ ':path': '/', ':authority': 'x' });
        let status = 0;
        s.on('response', (h) => (status = Number(h[':status'])));
        s.resume();
        s.on('end', () => resolve(status));
        s.on('error', reject);
        setTimeout(() => reject(new Error('no answer within 3 s')), 3000).unref();
      });
    return await Promise.all([one(), one(), one(), one(), one()]);
  } finally {
    client.close();
  }
}

test('max_concurrent_streams: a client keeps to it, so the upstream never holds more', async () => {
  await withProxy({ max_concurrent_streams: 2 }, async (proxy) => {
    assert.deepEqual(await fiveAtOnce(proxy.port), [200, 200, 200, 200, 200]);
    assert.equal(maxInFlight, 2);
  });
  // Without it, the same five run side by side.
  await withProxy(null, async (proxy) => {
    assert.deepEqual(await fiveAtOnce(proxy.port), [200, 200, 200, 200, 200]);
    assert.equal(maxInFlight, 5);
  });
});

/** What a raw HTTP/2 client that opens streams 1, 3 and 5 at once hears back. */
interface RawOutcome {
  /** RST_STREAM codes by stream. */
  resets: Map<number, number>;
  /** The GOAWAY error code, or null before one. */
  goAway: number | null;
}

/**
 * Opens three streams at once (GET / with :authority x: static table indexes and one
 * literal, END_STREAM | END_HEADERS), right after the preface, or (`ackFirst`) once the
 * server's SETTINGS are acknowledged.
 */
async function threeStreams(port: number, ackFirst: boolean, run: (o: RawOutcome) => Promise<void>) {
  const socket = net.connect(port, '127.0.0.1');
  const outcome: RawOutcome = { resets: new Map(), goAway: null };
  const block = Buffer.from([0x82, 0x86, 0x84, 0x01, 0x01, 0x78]);
  const headers = Buffer.concat([frame(1, 0x5, 1, block), frame(1, 0x5, 3, block), frame(1, 0x5, 5, block)]);
  let buffered = Buffer.alloc(0);
  socket.on('error', () => {});
  socket.on('data', (chunk: Buffer) => {
    buffered = Buffer.concat([buffered, chunk]);
    while (buffered.length >= 9) {
      const length = buffered.readUIntBE(0, 3);
      if (buffered.length < 9 + length) break;
      const [type, flags] = [buffered[3], buffered[4] ?? 0];
      const stream = buffered.readUInt32BE(5) & 0x7fffffff;
      if (type === 3) outcome.resets.set(stream, buffered.readUInt32BE(9));
      if (type === 7) outcome.goAway = buffered.readUInt32BE(13);
      // The server's SETTINGS (not an ACK): acknowledge it, then open the streams.
      if (type === 4 && (flags & 1) === 0 && ackFirst)
        socket.write(Buffer.concat([frame(4, 1, 0, Buffer.alloc(0)), headers]));
      buffered = buffered.subarray(9 + length);
    }
  });
  try {
    await new Promise((resolve) => socket.once('connect', resolve));
    const preface = Buffer.concat([PREFACE, frame(4, 0, 0, Buffer.alloc(0))]);
    socket.write(ackFirst ? preface : Buffer.concat([preface, headers]));
    await run(outcome);
  } finally {
    socket.destroy();
  }
}

test('max_concurrent_streams: a stream over it before the SETTINGS ACK gets REFUSED_STREAM, not an upstream request', async () => {
  await withProxy({ max_concurrent_streams: 2 }, async (proxy) => {
    await threeStreams(proxy.port, false, async (outcome) => {
      const NGHTTP2_REFUSED_STREAM = 7;
      const refused = await settle(() => outcome.resets.get(5), NGHTTP2_REFUSED_STREAM, 2000);
      assert.equal(refused, NGHTTP2_REFUSED_STREAM);
      await settle(() => seen, 2, 1000);
      assert.equal(seen, 2);
      assert.equal(outcome.resets.has(1) || outcome.resets.has(3), false);
      assert.equal(outcome.goAway, null);
    });
  });
});

test('max_concurrent_streams: after the ACK, nghttp2 ends the connection (GOAWAY PROTOCOL_ERROR)', async () => {
  await withProxy({ max_concurrent_streams: 2 }, async (proxy) => {
    await threeStreams(proxy.port, true, async (outcome) => {
      const NGHTTP2_PROTOCOL_ERROR = 1;
      assert.equal(await settle(() => outcome.goAway, NGHTTP2_PROTOCOL_ERROR, 2000), NGHTTP2_PROTOCOL_ERROR);
      await new Promise((r) => setTimeout(r, 200));
      assert.ok(seen <= 2, `the third stream never reaches the upstream (${seen} did)`);
    });
  });
});

test("a cluster's http2_protocol_options reach its upstream sessions: SETTINGS and connection window", async () => {
  let upstreamSession: http2.Http2Session | null = null;
  /** What the proxy's connection window was when its request came, before any DATA used it. */
  let windowAtRequest = 0;
  const h2Upstream = http2.createServer();
  h2Upstream.on('stream', (stream) => {
    upstreamSession = stream.session ?? null;
    windowAtRequest = stream.session?.state.remoteWindowSize ?? 0;
    stream.respond({ ':status': 200 });
    stream.end('h2');
  });
  await new Promise<void>((r) => h2Upstream.listen(0, '127.0.0.1', r));
  const raw = {
    name: 'h2',
    http2_protocol_options: {
      hpack_table_size: 2048,
      initial_stream_window_size: 131072,
      initial_connection_window_size: 1048576,
    },
  };
  const proxy = await startProxy(hcmConfig('h2'), [
    { raw, addresses: [`127.0.0.1:${(h2Upstream.address() as net.AddressInfo).port}`] },
  ]);
  try {
    const res = await fetch(`http://127.0.0.1:${proxy.port}/`, { signal: AbortSignal.timeout(3000) });
    assert.equal(await res.text(), 'h2');
    const session = upstreamSession as http2.Http2Session | null;
    assert.ok(session, 'the request went upstream over HTTP/2');
    assert.equal(session.remoteSettings.headerTableSize, 2048);
    assert.equal(session.remoteSettings.initialWindowSize, 131072);
    // Sent with the session's first frames, so it is there before the request's HEADERS.
    assert.equal(windowAtRequest, 1048576);
  } finally {
    await proxy.close();
    h2Upstream.close();
  }
});
