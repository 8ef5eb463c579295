/**
 * Transparent interception as a sidecar receives it, end to end: a client in one network
 * namespace dials a server in another; an iptables REDIRECT rule there sends the connection
 * to the proxy instead, whose `original_dst` listener filter (or `use_original_dst`) reads
 * SO_ORIGINAL_DST through the native helper, and whose ORIGINAL_DST cluster forwards it to the
 * address the client dialled. A `freebind` listener binds an address the namespace does not
 * have yet, and serves once it has it. Needs root, `ip` and `iptables`; skips saying why
 * where network namespaces cannot be made.
 */
import assert from 'node:assert/strict';
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import * as http from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import type { JsonObject } from '../../../events/index.js';
import { socketHelper } from '../../../src/dataplane/listeners/native.js';
import { hcmFilterV3 } from '../../helpers/bootstraps.js';
import { spawnProxy } from '../../helpers/cli.js';

const tag = `${process.pid % 100000}`;
const CLIENT_NS = `odst-c${tag}`;
const PROXY_NS = `odst-p${tag}`;
const CLIENT_IP = '10.77.0.1';
const SERVER_IP = '10.77.0.2';
/** Not on any interface when the proxy starts: only `freebind` lets it bind there. */
const FREE_IP = '10.77.0.50';

function sh(...argv: string[]): string {
  return execFileSync(argv[0] as string, argv.slice(1), {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'pipe'],
  });
}

/** Why namespaces cannot be used here, or null when they can. */
function unavailable(): string | null {
  if (process.platform !== 'linux') return 'network namespaces are Linux-only';
  if (process.getuid?.() !== 0) return 'needs root for ip netns and iptables';
  if (typeof socketHelper() === 'string') return `the native helper is not built: ${socketHelper()}`;
  try {
    sh('iptables', '--version');
    sh('ip', 'netns', 'add', CLIENT_NS);
    return null;
  } catch (err) {
    return `cannot make a network namespace: ${(err as Error).message.split('\n')[0]}`;
  }
}

// node:test skips on any value but undefined and false.
const skip = unavailable() ?? false;
const dir = mkdtempSync(join(tmpdir(), 'original-dst-'));
const adminPath = join(dir, 'admin.sock');
const children: ChildProcess[] = [];

/** A process inside `ns`, whose first line on stdout says it is ready. */
async function inNamespace(ns: string, argv: string[]): Promise<ChildProcess> {
  const child = spawn('ip', ['netns', 'exec', ns, ...argv], { stdio: ['ignore', 'pipe', 'pipe'] });
  children.push(child);
  await waitFor(child, (out) => out.includes('\n'));
  return child;
}

function waitFor(child: ChildProcess, done: (out: string) => boolean, ms = 30000): Promise<void> {
  return new Promise((resolve, reject) => {
    let out = '';
    let err = '';
    const timer = setTimeout(() => reject(new Error(`not ready within ${ms} ms: ${err}`)), ms);
    child.stdout?.on('data', (d: Buffer) => {
      out += d;
      if (done(out)) {
        clearTimeout(timer);
        resolve();
      }
    });
    child.stderr?.on('data', (d: Buffer) => {
      err += d;
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`exited with ${code}: ${err}`));
    });
  });
}

/** An HTTP server (run in the proxy's namespace) that answers with the peer it saw. */
const UPSTREAM = `
  const http = require('node:http');
  const ports = process.argv.slice(1).map(Number);
  let up = 0;
  for (const port of ports)
    http.createServer((req, res) => {
      res.setHeader('server', 'upstream');
      res.end(JSON.stringify({ port, peer: req.socket.remoteAddress, forwarded: req.headers['x-forwarded-proto'] ?? null }));
    }).listen(port, '${SERVER_IP}', () => { if (++up === ports.length) console.log('ready'); });
`;

function admin(path: string): Promise<string> {
  return new Promise((resolve, reject) => {
    http
      .get({ socketPath: adminPath, path }, (res) => {
        let body = '';
        res.on('data', (d: Buffer) => {
          body += d;
        });
        res.on('end', () => resolve(body));
      })
      .on('error', reject);
  });
}

/** `curl` from the client's namespace: status line, headers and body. */
function curlFromClient(url: string): string {
  return sh('ip', 'netns', 'exec', CLIENT_NS, 'curl', '-s', '-i', '--max-time', '10', url);
}

function stat(body: string, name: string): number {
  return Number(new RegExp(`^${name.replaceAll('.', '\\.')}: (\\d+)$`, 'm').exec(body)?.[1] ?? -1);
}

const listener = (name: string, ip: string, port: number, extra: object, filter: object) => ({
  name,
  address: { socket_address: { address: ip, port_value: port } },
  ...extra,
  filter_chains: [{ filters: [filter] }],
});
const hcm = (routes: JsonObject) =>
  hcmFilterV3('sidecar', {
    route_config: { virtual_hosts: [{ name: 'all', domains: ['*'], routes: [routes] }] },
    http_filters: [{ name: 'envoy.filters.http.router' }],
  });

const bootstrap = {
  admin: { address: { pipe: { path: adminPath } } },
  static_resources: {
    listeners: [
      // As the reference's configs/original-dst-cluster: the v3 filter, an HTTP route to the cluster.
      listener(
        'http_in',
        '0.0.0.0',
        15001,
        {
          listener_filters: [
            {
              name: 'envoy.filters.listener.original_dst',
              typed_config: {
                '@type': 'type.googleapis.com/envoy.extensions.filters.listener.original_dst.v3.OriginalDst',
              },
            },
          ],
        },
        hcm({ match: { prefix: '/' }, route: { cluster: 'original' } }),
      ),
      // The v2 field, under a TCP proxy: the bytes go where the client dialled.
      listener(
        'tcp_in',
        '0.0.0.0',
        15002,
        { use_original_dst: true },
        {
          name: 'envoy.tcp_proxy',
          typed_config: {
            '@type': 'type.googleapis.com/envoy.config.filter.network.tcp_proxy.v2.TcpProxy',
            stat_prefix: 'tcp',
            cluster: 'original',
          },
        },
      ),
      listener(
        'free',
        FREE_IP,
        15003,
        { freebind: true, transparent: true },
        hcm({
          match: { prefix: '/' },
          direct_response: { status: 200, body: { inline_string: 'freebound' } },
        }),
      ),
    ],
    clusters: [
      { name: 'original', type: 'ORIGINAL_DST', lb_policy: 'CLUSTER_PROVIDED', connect_timeout: '5s' },
    ],
  },
};

before(async () => {
  if (skip) return;
  sh('ip', 'netns', 'add', PROXY_NS);
  sh('ip', 'link', 'add', `oa${tag}`, 'type', 'veth', 'peer', 'name', `ob${tag}`);
  sh('ip', 'link', 'set', `oa${tag}`, 'netns', CLIENT_NS);
  sh('ip', 'link', 'set', `ob${tag}`, 'netns', PROXY_NS);
  for (const [ns, dev, ip] of [
    [CLIENT_NS, `oa${tag}`, CLIENT_IP],
    [PROXY_NS, `ob${tag}`, SERVER_IP],
  ] as const) {
    sh('ip', '-n', ns, 'addr', 'add', `${ip}/24`, 'dev', dev);
    sh('ip', '-n', ns, 'link', 'set', dev, 'up');
    sh('ip', '-n', ns, 'link', 'set', 'lo', 'up');
  }
  // What a sidecar's init container installs: inbound connections to the app's ports go to the proxy.
  for (const [port, to] of [
    ['8080', '15001'],
    ['9090', '15002'],
  ] as const)
    sh(
      ...['ip', 'netns', 'exec', PROXY_NS, 'iptables', '-t', 'nat', '-A', 'PREROUTING', '-i', `ob${tag}`],
      ...['-p', 'tcp', '--dport', port, '-j', 'REDIRECT', '--to-ports', to],
    );
  await inNamespace(PROXY_NS, [process.execPath, '-e', UPSTREAM, '8080', '9090']);
  const config = join(dir, 'bootstrap.json');
  writeFileSync(config, JSON.stringify(bootstrap));
  const proxy = spawnProxy(['-c', config, '--concurrency', '2', '-l', 'warning'], {}, false, [
    'ip',
    'netns',
    'exec',
    PROXY_NS,
  ]);
  children.push(proxy);
  const deadline = Date.now() + 30000;
  while (!(await admin('/ready').catch(() => '')).includes('LIVE')) {
    assert.ok(Date.now() < deadline && proxy.exitCode === null, 'the proxy did not go LIVE');
    await new Promise((r) => setTimeout(r, 100));
  }
});

after(() => {
  for (const child of children) child.kill('SIGKILL');
  if (!skip) {
    for (const ns of [CLIENT_NS, PROXY_NS]) {
      try {
        sh('ip', 'netns', 'del', ns);
      } catch {
        // never made (before() failed early)
      }
    }
  }
  rmSync(dir, { recursive: true, force: true });
});

test('an HTTP connection REDIRECTed to the proxy reaches the address its client dialled', {
  skip,
}, async () => {
  for (let i = 0; i < 4; i++) {
    const reply = curlFromClient(`http://${SERVER_IP}:8080/x`);
    const body = JSON.parse(reply.slice(reply.indexOf('\r\n\r\n') + 4)) as Record<string, unknown>;
    // The upstream saw the proxy (its own address), not the client; the proxy rewrote `server`.
    assert.deepEqual(body, { port: 8080, peer: SERVER_IP, forwarded: 'http' });
    assert.match(reply, /^server: (?!upstream)/im);
  }
  const stats = await admin('/stats');
  assert.ok(stat(stats, 'listener.0.0.0.0_15001.downstream_cx_total') >= 4, stats);
  assert.ok(stat(stats, 'cluster.original.upstream_rq_total') >= 4, stats);
});

test('use_original_dst under a TCP proxy: the bytes go where the client dialled', { skip }, async () => {
  const reply = curlFromClient(`http://${SERVER_IP}:9090/y`);
  const body = JSON.parse(reply.slice(reply.indexOf('\r\n\r\n') + 4)) as Record<string, unknown>;
  // A TCP proxy forwards the request untouched: no x-forwarded-proto, the upstream's own server header.
  assert.deepEqual(body, { port: 9090, peer: SERVER_IP, forwarded: null });
  assert.match(reply, /^server: upstream/im);
  assert.ok(stat(await admin('/stats'), 'listener.0.0.0.0_15002.downstream_cx_total') >= 1);
});

test('a freebind listener bound an address before the host had it, and serves once it does', {
  skip,
}, async () => {
  sh('ip', '-n', PROXY_NS, 'addr', 'add', `${FREE_IP}/32`, 'dev', `ob${tag}`);
  sh('ip', '-n', CLIENT_NS, 'route', 'add', `${FREE_IP}/32`, 'dev', `oa${tag}`);
  const reply = curlFromClient(`http://${FREE_IP}:15003/`);
  assert.match(reply, /^HTTP\/1\.1 200/);
  assert.ok(reply.endsWith('freebound'), reply);
});
