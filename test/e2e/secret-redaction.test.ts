/**
 * The private keys of real TLS secrets (a static one a listener serves, one from SDS a cluster
 * presents) show in no admin answer, no event-log line and no replay. The compiled secrets
 * (their key bytes) are held beside the snapshot, never in it, so only the raw JSON can reach
 * an output, and every output redacts it (views/redact.ts). `test/e2e/redaction.test.ts`
 * covers the same outputs with secrets in free-form node metadata.
 */
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import type { JsonObject } from '../../events/index.js';
import { handlers } from '../../src/admin/handlers/index.js';
import { REPLAY_VIEWS, renderReplayView } from '../../src/cli/replay-views.js';
import { replayLog } from '../../src/control/replay.js';
import { runProxy } from '../helpers/cli.js';
import { followEvents, type ProxyProcess, startProxyProcess } from '../helpers/proxy-process.js';
import { ADMIN, httpListener, staticCluster } from '../helpers/xds-fixtures.js';
import { type Issued, makePki, type TestPki } from '../tls/certs.js';

let pki: TestPki;
let served: Issued;
let presented: Issued;
let proxy: ProxyProcess;
let log = '';

/**
 * Lines of the keys' base64 body: any one of them in an output is a leak. The last line of an
 * EC key holds its public point only, which the certificate carries too (and may align with
 * in base64); lines found in a certificate are left out.
 */
function keyLines(): string[] {
  const certs = [served, presented].map((issued) => issued.certPem.replaceAll('\n', '')).join(' ');
  return [served, presented].flatMap((issued) =>
    issued.keyPem
      .split('\n')
      .filter((line) => line.length > 20 && !line.startsWith('-----') && !certs.includes(line)),
  );
}

function assertNoKey(what: string, text: string): void {
  for (const line of keyLines()) assert.ok(!text.includes(line), `${what} shows key material ${line}`);
}

const certificate = (issued: Issued): JsonObject => ({
  certificate_chain: { inline_string: issued.certPem },
  private_key: { inline_string: issued.keyPem },
});

before(async () => {
  pki = makePki();
  served = pki.leaf('front', ['DNS:front.test']);
  presented = pki.leaf('client', ['DNS:client.test']);
  log = join(pki.dir, 'events.ndjson');
  const sdsFile = join(pki.dir, 'client-cert.json');
  writeFileSync(
    sdsFile,
    JSON.stringify({
      version_info: 's1',
      resources: [
        {
          '@type': 'type.googleapis.com/envoy.api.v2.auth.Secret',
          name: 'client-cert',
          tls_certificate: certificate(presented),
        },
      ],
    }),
  );
  const listener = httpListener('front', 'backend') as { filter_chains: JsonObject[] };
  listener.filter_chains[0]!.tls_context = {
    common_tls_context: { tls_certificate_sds_secret_configs: [{ name: 'front-cert' }] },
  };
  const cluster = {
    ...staticCluster('backend', [9]),
    tls_context: {
      common_tls_context: {
        tls_certificate_sds_secret_configs: [{ name: 'client-cert', sds_config: { path: sdsFile } }],
      },
    },
  };
  proxy = await startProxyProcess(
    {
      admin: ADMIN,
      static_resources: {
        secrets: [{ name: 'front-cert', tls_certificate: certificate(served) }],
        listeners: [listener],
        clusters: [cluster],
      },
    },
    ['--event-log', log, '--concurrency', '2'],
    60_000,
  );
});
after(async () => {
  await proxy?.stop();
  pki?.remove();
});

test('both secrets are loaded and shown (the test would prove nothing otherwise)', async () => {
  assert.ok(keyLines().length >= 4, 'key lines to look for');
  const certs = await proxy.get('/certs');
  assert.equal(certs.status, 200);
  assert.match(certs.body, /front\.test/, 'the static secret serves');
  assert.match(certs.body, /client\.test/, 'the discovered secret is presented');
  const dump = await proxy.get('/config_dump');
  const chainLine = presented.certPem.split('\n')[1]!;
  assert.ok(dump.body.includes(chainLine), 'the discovered certificate chain is shown');
  assert.ok(dump.body.includes('front-cert') && dump.body.includes('[redacted]'));
});

test('no admin page shows a private key, in any of its formats', async () => {
  const pages: string[] = ['/config_dump?include_eds', '/config_dump?resource=dynamic_active_secrets'];
  for (const h of handlers) {
    // A heap dump is the process's memory, keys included, by its nature; streams are read below.
    if (h.mutates || h.stream || h.params.some((p) => p.required)) continue;
    pages.push(h.path);
    for (const p of h.params.filter((p) => p.kind === 'enum'))
      for (const v of p.values ?? []) pages.push(`${h.path}?${p.name}=${v}`);
  }
  pages.push('/events?format=json', '/snapshots/diff?from=0', '/snapshots/blame?path=/bootstrap/config');
  assert.ok(pages.length > 20, pages.join(' '));
  for (const page of pages) {
    const { status, body } = await proxy.get(page);
    assert.ok(status < 500, `${page}: ${status}`);
    assertNoKey(page, body);
  }
});

test('the event log, its stream and every replay view show no private key', async () => {
  // A mutation is answered once the log holds it (and everything before it).
  assert.equal((await proxy.post('/healthcheck/fail')).status, 200);
  const file = readFileSync(log, 'utf8');
  assert.ok(file.includes('client-cert') && file.includes('front-cert'), 'both secrets are recorded');
  assertNoKey('the event-log file', file);

  const streamed = await followEvents(
    proxy.admin,
    (text) => text.includes('client-cert') && text.includes('server/healthcheck-failed'),
  );
  assert.ok(streamed.includes('client-cert'), 'the stream carried the discovered secret');
  assertNoKey('/events?follow', streamed);

  const replayed = await replayLog(log);
  for (const view of REPLAY_VIEWS)
    for (const format of ['text', 'json'] as const) {
      const out = renderReplayView(view, format, replayed.state, replayed.header?.options ?? null);
      assertNoKey(`replay --view ${view} --format ${format}`, String(out.body));
    }
  const cli = await runProxy(['replay', log, '--view', 'snapshot']);
  assert.equal(cli.code, 0, cli.stderr);
  assert.ok(cli.stdout.includes('client-cert'));
  assertNoKey('proxy replay --view snapshot', cli.stdout);
  assertNoKey("the proxy's own log", proxy.stderr());
});
