/**
 * The envoyproxy.io quick start's v3 bootstrap (fixtures/real-world/envoy-demo.yaml, pasted
 * unchanged) validates as written, and a copy with its cluster pointed at a local TLS
 * upstream serves: the route's `host_rewrite_literal` sets Host, the v3 UpstreamTlsContext's
 * `sni` reaches the upstream, and the stdout access logger writes each request to the
 * process's stdout, from the workers too, as v3's `admin.access_log` does for admin requests;
 * `/config_dump` shows its resources in v3, as they came in.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import * as https from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TLSSocket } from 'node:tls';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { parse } from 'yaml';
import { repoRoot, runProxy, spawnProxy } from '../helpers/cli.js';
import { makePki, type TestPki } from '../tls/certs.js';

const DEMO = join(repoRoot, 'fixtures/real-world/envoy-demo.yaml');

describe('the envoyproxy.io quick-start bootstrap', () => {
  let pki: TestPki;
  let upstream: https.Server;
  const seen: Array<{ host: string | undefined; sni: string | false | null }> = [];
  const dir = mkdtempSync(join(tmpdir(), 'proxy-quick-start-'));

  before(async () => {
    pki = makePki();
    const leaf = pki.leaf('www.envoyproxy.io', ['DNS:www.envoyproxy.io']);
    upstream = https.createServer({ cert: leaf.certPem, key: leaf.keyPem }, (req, res) => {
      seen.push({ host: req.headers.host, sni: (req.socket as TLSSocket).servername });
      res.end('welcome to the demo\n');
    });
    await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
  });
  after(() => {
    upstream.close();
    pki.remove();
    rmSync(dir, { recursive: true, force: true });
  });

  it('passes --mode validate as pasted', async () => {
    const run = await runProxy(['--mode', 'validate', '-c', DEMO]);
    assert.equal(run.code, 0, run.stderr);
    assert.equal(run.stdout, `configuration '${DEMO}' OK\n`);
  });

  it('serves with two workers: Host and SNI rewritten, one stdout access log line per request', async () => {
    const demo = parse(readFileSync(DEMO, 'utf8'));
    const listener = demo.static_resources.listeners[0];
    listener.address.socket_address = { address: '127.0.0.1', port_value: 0 };
    const endpoint = demo.static_resources.clusters[0].load_assignment.endpoints[0].lb_endpoints[0].endpoint;
    endpoint.address.socket_address = {
      address: '127.0.0.1',
      port_value: (upstream.address() as AddressInfo).port,
    };
    // v3's admin.access_log, with the stdout logger too
    demo.admin = {
      address: { socket_address: { address: '127.0.0.1', port_value: 0 } },
      access_log: [{ name: 'envoy.access_loggers.stdout' }],
    };
    const config = join(dir, 'demo-local.yaml');
    writeFileSync(config, JSON.stringify(demo));
    const adminPath = join(dir, 'admin');
    const child = spawnProxy([
      '-c',
      config,
      '--admin-address-path',
      adminPath,
      '--concurrency',
      '2',
      '--file-flush-interval-msec',
      '100',
    ]);
    let stdout = '';
    let stderr = '';
    child.stdout?.on('data', (d: Buffer) => {
      stdout += d;
    });
    child.stderr?.on('data', (d: Buffer) => {
      stderr += d;
    });
    try {
      let admin = '';
      for (let i = 0; i < 200; i++) {
        await sleep(100);
        try {
          admin = `http://${readFileSync(adminPath, 'utf8').trim()}`;
          if ((await fetch(`${admin}/ready`)).status === 200) break;
        } catch {
          // not up yet
        }
        assert.equal(child.exitCode, null, stderr);
      }
      const listeners = (await (await fetch(`${admin}/listeners?format=json`)).json()) as {
        listener_statuses: Array<{ local_address: { socket_address: { port_value: number } } }>;
      };
      const port = listeners.listener_statuses[0]?.local_address.socket_address.port_value;
      for (let i = 0; i < 4; i++) {
        const res = await fetch(`http://127.0.0.1:${port}/docs/${i}`);
        assert.equal(res.status, 200);
        assert.equal(await res.text(), 'welcome to the demo\n');
      }
      // v3 in, v3 out: /config_dump shows the pasted resources as they were written
      const dump = await (await fetch(`${admin}/config_dump`)).text();
      assert.match(dump, /"@type": "type\.googleapis\.com\/envoy\.config\.cluster\.v3\.Cluster"/);
      assert.match(dump, /"@type": "type\.googleapis\.com\/envoy\.config\.listener\.v3\.Listener"/);
      assert.match(dump, /"host_rewrite_literal": "www\.envoyproxy\.io"/);
      assert.match(dump, /transport_sockets\.tls\.v3\.UpstreamTlsContext/);
      assert.doesNotMatch(dump, /envoy\.api\.v2\.|"host_rewrite"/);
      for (let i = 0; i < 50 && !stdout.includes('"GET /listeners?format=json HTTP/1.1" 200'); i++)
        await sleep(100);
      assert.ok(stdout.includes('"GET /listeners?format=json HTTP/1.1" 200'), stdout);
      assert.deepEqual(
        seen.splice(0),
        Array(4).fill({ host: 'www.envoyproxy.io', sni: 'www.envoyproxy.io' }),
      );
      for (let i = 0; i < 50 && (stdout.match(/"GET \/docs\/\d HTTP\/1\.1" 200 /g) ?? []).length < 4; i++)
        await sleep(100);
      // the reference's default format: the request line, status, flags, the upstream host and authority
      for (let i = 0; i < 4; i++)
        assert.match(
          stdout,
          new RegExp(
            `"GET /docs/${i} HTTP/1\\.1" 200 - 0 20 \\d+ (\\d+|-) "-" "[^"]*" "[^"]*" "127\\.0\\.0\\.1:${port}" "127\\.0\\.0\\.1:\\d+"\\n`,
          ),
        );
    } finally {
      child.kill('SIGTERM');
      await new Promise((resolve) => child.once('close', resolve));
    }
  });
});
