import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import * as http from 'node:http';
import * as net from 'node:net';
import { dirname, resolve } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { stripVTControlCharacters } from 'node:util';
import { ListenerManager } from '../../../src/dataplane/listeners/manager.js';
import { hcmWithRoutes, httpBootstrap } from '../../helpers/bootstraps.js';
import { cleanupsAfterAll } from '../../helpers/cleanups.js';
import { boundPort, cluster, loadedContext, staticClusters } from '../../helpers/dataplane.js';

/**
 * The h2spec conformance suite (RFC 7540 and 7541, 146 cases) against an h2c listener in
 * front of a real HTTP/1.1 upstream. The binary is a test tool kept outside the repository,
 * so a checkout without it skips rather than fails.
 */

const compiled = import.meta.url.includes('/dist/');
/** The repository root, from `test/dataplane/http` (tsx) or `dist/test/dataplane/http` (compiled). */
const REPO = resolve(dirname(fileURLToPath(import.meta.url)), compiled ? '../../../..' : '../../..');
const H2SPEC = process.env.H2SPEC ?? resolve(REPO, '..', 'shared/tools/h2spec/h2spec');

/**
 * The counts reached; docs/reliability.md lists the case still failing and why (HAProxy
 * passes 145, a bare node:http2 server on the same Node 136, NGINX 120). With AUTO, bytes
 * that are not the HTTP/2 preface are taken for HTTP/1 and answered 400, which h2spec's 3.5/2
 * cannot read.
 */
const MIN_PASSED: Record<string, number> = { HTTP2: 145, AUTO: 144 };

/**
 * The failures docs/reliability.md explains. A case outside this list that fails is run again
 * alone: some cases race the answer against the client's next frame (5.1/5 sends DATA after
 * END_STREAM, and a fast upstream can complete the stream before that DATA arrives), and on a
 * loaded machine (CI) they sometimes lose. A case that fails alone too still fails the test.
 */
const EXPLAINED = new Set(['http2/3.5/2']);
const RERUNS = 2;

const cleanups = cleanupsAfterAll();

async function startH2c(codec: string): Promise<number> {
  const upstream = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => res.end('hello'));
  });
  await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
  cleanups.push(async () => {
    upstream.closeAllConnections();
    await new Promise<void>((r) => upstream.close(() => r()));
  });
  const web = cluster('web', [(upstream.address() as net.AddressInfo).port]);
  const routes = [{ match: { prefix: '/' }, route: { cluster: 'web' } }];
  const ctx = loadedContext(httpBootstrap([web], { ...hcmWithRoutes(routes, 'h2c'), codec_type: codec }));
  const manager = new ListenerManager(ctx, staticClusters(ctx));
  await manager.start();
  cleanups.push(async () => {
    await manager.close();
    await ctx.close();
  });
  return boundPort(ctx, 'http');
}

interface H2specResult {
  passed: number;
  failed: number;
  skipped: number;
  /** Failed case titles, grouped by section (`http2/6.9.1` and the like). */
  failures: Map<string, string[]>;
}

const GROUPS: Array<[RegExp, string]> = [
  [/^Generic tests/, 'generic'],
  [/^Hypertext Transfer Protocol/, 'http2'],
  [/^HPACK/, 'hpack'],
];

/**
 * Reads h2spec's plain report. Its "Failures:" recap repeats each failed case (`× N: title`,
 * then what was expected and what came) under its group and numbered section headings.
 */
function parseReport(output: string): H2specResult {
  const text = stripVTControlCharacters(output);
  const summary = /(\d+) tests, (\d+) passed, (\d+) skipped, (\d+) failed/.exec(text);
  assert.ok(summary, `no h2spec summary in:\n${text.slice(-2000)}`);
  const failures = new Map<string, string[]>();
  const recapAt = text.indexOf('Failures:');
  let group = '';
  let section = '';
  for (const line of recapAt < 0 ? [] : text.slice(recapAt).split(/\r?\n/)) {
    const named = GROUPS.find(([pattern]) => pattern.test(line));
    if (named) group = named[1];
    const heading = /^\s*(\d+(?:\.\d+)*)\.\s/.exec(line);
    if (heading) section = `${group}/${heading[1]}`;
    const failed = /^\s*×\s*(\d+: .*)$/.exec(line);
    if (failed) failures.set(section, [...(failures.get(section) ?? []), (failed[1] as string).trim()]);
    const actual = /^\s*Actual: (.*)$/.exec(line);
    const cases = failures.get(section);
    if (actual && cases) cases[cases.length - 1] += ` (got ${(actual[1] as string).trim()})`;
  }
  return {
    passed: Number(summary[2]),
    skipped: Number(summary[3]),
    failed: Number(summary[4]),
    failures,
  };
}

function runH2spec(port: number, cases: string[] = []): Promise<H2specResult> {
  return new Promise((resolve, reject) => {
    execFile(
      H2SPEC,
      [...cases, '-h', '127.0.0.1', '-p', String(port), '-o', '1'],
      { timeout: 120_000, maxBuffer: 16 * 1024 * 1024 },
      (err, stdout) => {
        // h2spec exits non-zero when any case fails; only a missing summary is an error.
        if (err && !/tests, \d+ passed/.test(stdout)) reject(err);
        else resolve(parseReport(stdout));
      },
    );
  });
}

/** `http2/5.1` and `5: half closed ...` make `http2/5.1/5`, the id h2spec runs one case by. */
function caseIds(failures: Map<string, string[]>): string[] {
  return [...failures].flatMap(([section, cases]) => cases.map((c) => `${section}/${c.split(':')[0]}`));
}

/** Runs the suite, then each unexplained failure alone until it passes or RERUNS are spent. */
async function runWithReruns(port: number): Promise<{ result: H2specResult; flaky: string[] }> {
  const result = await runH2spec(port);
  const flaky: string[] = [];
  for (const id of caseIds(result.failures).filter((id) => !EXPLAINED.has(id))) {
    for (let run = 0; run < RERUNS; run++) {
      if ((await runH2spec(port, [id])).failed === 0) {
        flaky.push(id);
        break;
      }
    }
  }
  const passed = result.passed + flaky.length;
  return { result: { ...result, passed, failed: result.failed - flaky.length }, flaky };
}

for (const [codec, min] of Object.entries(MIN_PASSED)) {
  test(`h2spec on an h2c listener (codec_type ${codec}) passes at least ${min} of 146`, async (t) => {
    if (!existsSync(H2SPEC)) {
      t.skip(`h2spec not found at ${H2SPEC} (set H2SPEC to its path)`);
      return;
    }
    const port = await startH2c(codec);
    const { result, flaky } = await runWithReruns(port);
    const listing = [...result.failures].map(([s, cases]) => `${s}: ${cases.join('; ')}`);
    t.diagnostic(`${result.passed} passed, ${result.failed} failed, ${result.skipped} skipped`);
    for (const line of listing) t.diagnostic(`failed ${line}`);
    for (const id of flaky) t.diagnostic(`${id} failed in the suite run and passed alone`);
    assert.ok(result.passed >= min, `h2spec passed ${result.passed} < ${min}:\n${listing.join('\n')}`);
  });
}

test('the h2spec report reader groups failures by section and keeps what came instead', () => {
  const report = [
    '\x1b[1mFailures:\x1b[0m ',
    '',
    'Hypertext Transfer Protocol Version 2 (HTTP/2)',
    '  5. Streams and Multiplexing',
    '    5.1. Stream States',
    '      \x1b[31m× 8: closed: Sends a DATA frame after sending RST_STREAM frame\x1b[0m',
    '        -> The endpoint MUST treat this as a stream error of type STREAM_CLOSED.',
    '           Expected: RST_STREAM Frame (Error Code: STREAM_CLOSED)',
    '             Actual: Timeout',
    '      5.1.1. Stream Identifiers',
    '        × 2: Sends stream identifier that is numerically smaller than previous',
    '               Actual: DATA Frame (length:5, flags:0x01, stream_id:5)',
    'HPACK: Header Compression for HTTP/2',
    '  6. Binary Format',
    '    × 1: Sends a indexed header field representation with invalid index',
    '        Actual: Connection closed',
    '',
    '146 tests, 143 passed, 0 skipped, 3 failed',
  ].join('\n');
  const result = parseReport(report);
  assert.deepEqual([result.passed, result.skipped, result.failed], [143, 0, 3]);
  assert.deepEqual(Object.fromEntries(result.failures), {
    'http2/5.1': ['8: closed: Sends a DATA frame after sending RST_STREAM frame (got Timeout)'],
    'http2/5.1.1': [
      '2: Sends stream identifier that is numerically smaller than previous (got DATA Frame (length:5, flags:0x01, stream_id:5))',
    ],
    'hpack/6': ['1: Sends a indexed header field representation with invalid index (got Connection closed)'],
  });
  assert.deepEqual(caseIds(result.failures), ['http2/5.1/8', 'http2/5.1.1/2', 'hpack/6/1']);
});

/** One HTTP/2 frame: 9-byte header, then the payload. */
function frame(type: number, flags: number, streamId: number, payload: Buffer): Buffer {
  const head = Buffer.alloc(9);
  head.writeUIntBE(payload.length, 0, 3);
  head[3] = type;
  head[4] = flags;
  head.writeUInt32BE(streamId, 5);
  return Buffer.concat([head, payload]);
}

/** Sends the preface, `frames`, and resolves to the first GOAWAY's error code (or -1 on close). */
function goAwayCode(port: number, frames: Buffer[]): Promise<number> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    const timer = setTimeout(() => socket.destroy(), 3000);
    let buf = Buffer.alloc(0);
    const done = (code: number) => {
      clearTimeout(timer);
      socket.destroy();
      resolve(code);
    };
    socket.on('data', (chunk: Buffer) => {
      buf = Buffer.concat([buf, chunk]);
      while (buf.length >= 9 && buf.length >= 9 + buf.readUIntBE(0, 3)) {
        const length = buf.readUIntBE(0, 3);
        if (buf[3] === 7) return done(buf.readUInt32BE(9 + 4));
        buf = buf.subarray(9 + length);
      }
    });
    socket.on('error', () => {});
    socket.on('close', () => done(-1));
    socket.write(Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n'));
    socket.write(Buffer.concat([frame(4, 0, 0, Buffer.alloc(0)), ...frames]));
  });
}

test('a connection error names its fault in the GOAWAY; an unsolicited PING ACK is ignored', async () => {
  const port = await startH2c('HTTP2');
  const increment = Buffer.alloc(4);
  increment.writeUInt32BE(0x7fffffff);
  // Two increments of 2^31-1 overflow the connection window: FLOW_CONTROL_ERROR (3).
  assert.equal(await goAwayCode(port, [frame(8, 0, 0, increment), frame(8, 0, 0, increment)]), 3);
  // RFC 9113 6.7: a PING ACK gets no answer; the connection goes on (then a DATA frame on
  // stream 0 is the PROTOCOL_ERROR (1) that ends it).
  const ackThenFault = [frame(6, 1, 0, Buffer.alloc(8)), frame(0, 0, 0, Buffer.from('x'))];
  assert.equal(await goAwayCode(port, ackThenFault), 1);
  // A frame larger than SETTINGS_MAX_FRAME_SIZE: FRAME_SIZE_ERROR (6).
  assert.equal(await goAwayCode(port, [frame(0, 0, 1, Buffer.alloc(16385))]), 6);
});
