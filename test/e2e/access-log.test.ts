/**
 * Access logs in a real serving process with two workers: every request logged once, as a
 * whole line, across rotations by rename + `POST /reopen_logs` and rename + SIGUSR1 under
 * traffic; admin requests go to `admin.access_log_path`.
 */
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, renameSync, rmSync } from 'node:fs';
import * as http from 'node:http';
import type * as net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { hcmWithRoutes, httpBootstrap } from '../helpers/bootstraps.js';
import { type ProxyProcess, startProxyProcess } from '../helpers/proxy-process.js';

const dir = mkdtempSync(join(tmpdir(), 'access-log-e2e-'));
const path = join(dir, 'access.log');
const adminPath = join(dir, 'admin.log');
let upstream: http.Server;
let proxy: ProxyProcess;
let port = 0;

before(async () => {
  upstream = http.createServer((_req, res) => res.end('ok'));
  await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
  const upPort = (upstream.address() as net.AddressInfo).port;
  const hcm = {
    ...hcmWithRoutes([{ match: { prefix: '/' }, route: { cluster: 'up' } }]),
    access_log: [
      { name: 'envoy.access_loggers.file', config: { path, format: '%REQ(X-SEQ)% %RESPONSE_CODE%\n' } },
    ],
  };
  const cluster = {
    name: 'up',
    connect_timeout: '1s',
    load_assignment: {
      cluster_name: 'up',
      endpoints: [
        {
          lb_endpoints: [
            { endpoint: { address: { socket_address: { address: '127.0.0.1', port_value: upPort } } } },
          ],
        },
      ],
    },
  };
  const bootstrap = httpBootstrap([cluster], hcm);
  (bootstrap.admin as Record<string, unknown>).access_log_path = adminPath;
  proxy = await startProxyProcess(bootstrap, ['--concurrency', '2', '--file-flush-interval-msec', '10']);
  port = await proxy.listenerPort('http');
});

after(async () => {
  await proxy?.stop();
  upstream.close();
  rmSync(dir, { recursive: true, force: true });
});

const agent = new http.Agent({ keepAlive: true, maxSockets: 8 });

function send(seq: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      { port, host: '127.0.0.1', path: '/', agent, headers: { 'x-seq': String(seq) } },
      (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      },
    );
    req.setTimeout(5000, () => req.destroy(new Error('timeout')));
    req.on('error', reject);
    req.end();
  });
}

const linesOf = (file: string) =>
  existsSync(file) ? readFileSync(file, 'utf8').split('\n').filter(Boolean) : [];

test('rotation by rename + /reopen_logs and by rename + SIGUSR1 under traffic loses no line and tears none', async () => {
  const total = 900;
  let next = 0;
  const rotations: Array<Promise<unknown>> = [];
  const worker = async () => {
    while (next < total) {
      const seq = next++;
      if (seq === 300) {
        renameSync(path, `${path}.1`);
        rotations.push(proxy.post('/reopen_logs'));
      }
      if (seq === 600) {
        renameSync(path, `${path}.2`);
        proxy.child.kill('SIGUSR1');
      }
      assert.equal(await send(seq), 200);
    }
  };
  await Promise.all(Array.from({ length: 8 }, worker));
  assert.deepEqual(
    (await Promise.all(rotations)).map((r) => (r as { status: number }).status),
    [200],
  );
  const files = [`${path}.1`, `${path}.2`, path];
  const deadline = Date.now() + 10000;
  let all: string[] = [];
  while (Date.now() < deadline) {
    all = files.flatMap(linesOf);
    if (all.length >= total) break;
    await new Promise((r) => setTimeout(r, 50));
  }
  for (const line of all) assert.match(line, /^\d+ 200$/, `torn or foreign line: ${JSON.stringify(line)}`);
  const seen = all.map((l) => Number(l.split(' ')[0])).sort((a, b) => a - b);
  assert.deepEqual(
    seen,
    Array.from({ length: total }, (_, i) => i),
    'every request logged exactly once',
  );
  for (const f of files) assert.ok(linesOf(f).length > 0, `${f} got lines`);
});

test('admin requests are logged to admin.access_log_path in the default format', async () => {
  await proxy.get('/server_info');
  await proxy.post('/reopen_logs');
  const deadline = Date.now() + 5000;
  let lines: string[] = [];
  while (Date.now() < deadline) {
    lines = linesOf(adminPath);
    if (lines.some((l) => l.includes('"GET /server_info HTTP/1.1" 200'))) break;
    await new Promise((r) => setTimeout(r, 50));
  }
  assert.ok(
    lines.some((l) =>
      /^\[\d{4}-\d\d-\d\dT[\d:.]+Z\] "GET \/server_info HTTP\/1\.1" 200 - 0 \d+ \d+ - "-" "[^"]*" "-" "127\.0\.0\.1:\d+" "-"$/.test(
        l,
      ),
    ),
    lines.join('\n'),
  );
  assert.ok(
    lines.some((l) => l.includes('"POST /reopen_logs HTTP/1.1" 200')),
    lines.join('\n'),
  );
});
