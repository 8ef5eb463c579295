/**
 * Issue 11 finding 5: user-given patterns run on RE2, so a pattern that makes a backtracking
 * engine take exponential time (`^([a-z_.]+)+!$` on a long name) answers at once, both on
 * the admin (`/stats?filter=`) and on the data plane (route `safe_regex`, header
 * `safe_regex_match`), with one worker so a stall anywhere would stall everything.
 */
import assert from 'node:assert/strict';
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import { test } from 'node:test';
import type { JsonObject } from '../../events/index.js';
import { hcmWithRoutes, httpBootstrap } from '../helpers/bootstraps.js';
import { cleanupsAfterAll } from '../helpers/cleanups.js';
import { cluster } from '../helpers/dataplane.js';
import { type ProxyProcess, startProxyProcess } from '../helpers/proxy-process.js';

const EVIL = '^([a-z_.]+)+!$';
/** Long enough that a backtracking engine would not finish within the test's lifetime. */
const LONG = 'a'.repeat(40);

const cleanups = cleanupsAfterAll();

/** GET with a hard deadline: a frozen process fails the test instead of hanging it. */
async function timedGet(url: string, headers: Record<string, string> = {}) {
  const started = performance.now();
  const res = await fetch(url, { headers, signal: AbortSignal.timeout(3000) });
  const body = await res.text();
  return { status: res.status, body, ms: performance.now() - started };
}

let proxy: ProxyProcess;
let port: number;

test('start a proxy whose routes use catastrophic regexes', async () => {
  const upstream = http.createServer((req, res) => res.end(`upstream ${req.url}`));
  await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
  cleanups.push(() => {
    upstream.close();
    upstream.closeAllConnections();
  });
  const upPort = (upstream.address() as AddressInfo).port;
  const routes: JsonObject[] = [
    {
      match: {
        prefix: '/h',
        headers: [{ name: 'x-name', safe_regex_match: { google_re2: {}, regex: EVIL } }],
      },
      direct_response: { status: 201, body: { inline_string: 'header regex' } },
    },
    {
      match: { safe_regex: { google_re2: {}, regex: '/([a-z]+)+!' } },
      direct_response: { status: 202, body: { inline_string: 'path regex' } },
    },
    { match: { prefix: '/' }, route: { cluster: 'web' } },
  ];
  proxy = await startProxyProcess(httpBootstrap([cluster('web', [upPort])], hcmWithRoutes(routes)), [
    '--concurrency',
    '1',
  ]);
  cleanups.push(proxy.stop);
  port = await proxy.listenerPort('http');
});

test('/stats?filter= with a catastrophic pattern answers quickly and still filters', async () => {
  // Long stat names are what the pattern backtracks on; a cluster name makes some.
  const evil = await timedGet(`${proxy.admin}/stats?filter=${encodeURIComponent(EVIL)}`);
  assert.equal(evil.status, 200);
  assert.equal(evil.body, '', 'no stat name ends in !');
  assert.ok(evil.ms < 2000, `took ${evil.ms} ms`);
  const nested = await timedGet(
    `${proxy.admin}/stats?filter=${encodeURIComponent('^(cluster\\.[a-z]+)+\\.')}`,
  );
  assert.equal(nested.status, 200);
  assert.match(nested.body, /^cluster\.web\./m);
  assert.doesNotMatch(nested.body, /^server\./m);
  const breakout = await timedGet(`${proxy.admin}/config_dump?name_regex=${encodeURIComponent('x)|(web')}`);
  assert.equal(breakout.status, 400, 'a pattern cannot break out of the full-match anchors');
  assert.match(breakout.body, /invalid name_regex/);
  const ready = await timedGet(`${proxy.admin}/ready`);
  assert.equal(ready.status, 200);
});

test('an RE2-only construct is accepted; a JS-only one is refused with 400', async () => {
  const re2Only = await timedGet(`${proxy.admin}/stats?filter=${encodeURIComponent('(?i)^SERVER\\.LIVE$')}`);
  assert.equal(re2Only.status, 200);
  assert.match(re2Only.body, /^server\.live: 1$/m);
  const lookahead = await timedGet(`${proxy.admin}/stats?filter=${encodeURIComponent('^server(?=\\.)')}`);
  assert.equal(lookahead.status, 400);
  assert.match(lookahead.body, /re2/i);
});

test('route safe_regex and header safe_regex_match do not stall the data plane', async () => {
  const path = await timedGet(`http://127.0.0.1:${port}/${LONG}`);
  assert.equal(path.status, 200, 'the regex route does not match; the prefix route does');
  assert.equal(path.body, `upstream /${LONG}`);
  assert.ok(path.ms < 2000, `took ${path.ms} ms`);
  const matched = await timedGet(`http://127.0.0.1:${port}/${LONG}!`);
  assert.equal(matched.status, 202);
  const header = await timedGet(`http://127.0.0.1:${port}/h`, { 'x-name': LONG });
  assert.equal(header.status, 200, 'the header regex does not match');
  assert.ok(header.ms < 2000, `took ${header.ms} ms`);
  const headerMatch = await timedGet(`http://127.0.0.1:${port}/h`, { 'x-name': `${LONG}!` });
  assert.equal(headerMatch.status, 201);
  assert.equal(headerMatch.body, 'header regex');
});
