// A quick per-request check for changes on the request path, where wrk is not installed:
// a node:http upstream, this proxy (`--concurrency 1`, run from src through tsx) routing `/` to a
// STATIC cluster holding it, and C keep-alive clients (default 1) looping for D seconds (default
// 10) after a 2 s warm-up. Prints requests/s and the proxy's CPU time per request (utime + stime
// from /proc), the steadier figure on a shared machine.
//   C=1 D=10 node bench/keepalive-loop.mjs
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import * as http from 'node:http';
import * as net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const seconds = Number(process.env.D ?? 10);
const clients = Number(process.env.C ?? 1);

const freePort = () =>
  new Promise((resolve) => {
    const s = net.createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });

const upstream = http.createServer((req, res) => {
  req.resume();
  req.on('end', () => {
    res.setHeader('content-length', 24);
    res.end('hello from the upstream\n');
  });
});
upstream.keepAliveTimeout = 60_000;
await new Promise((resolve) => upstream.listen(0, '127.0.0.1', resolve));

const listenerPort = await freePort();
const at = (port) => ({ socket_address: { address: '127.0.0.1', port_value: port } });
const bootstrap = {
  admin: { address: at(0) },
  static_resources: {
    clusters: [
      {
        name: 'upstream',
        type: 'STATIC',
        connect_timeout: '1s',
        load_assignment: {
          cluster_name: 'upstream',
          endpoints: [{ lb_endpoints: [{ endpoint: { address: at(upstream.address().port) } }] }],
        },
      },
    ],
    listeners: [
      {
        name: 'l',
        address: at(listenerPort),
        filter_chains: [
          {
            filters: [
              {
                name: 'envoy.http_connection_manager',
                typed_config: {
                  '@type':
                    'type.googleapis.com/envoy.config.filter.network.http_connection_manager.v2.HttpConnectionManager',
                  stat_prefix: 'bench',
                  route_config: {
                    virtual_hosts: [
                      {
                        name: 'all',
                        domains: ['*'],
                        routes: [{ match: { prefix: '/' }, route: { cluster: 'upstream' } }],
                      },
                    ],
                  },
                  http_filters: [{ name: 'envoy.router' }],
                },
              },
            ],
          },
        ],
      },
    ],
  },
};
const config = join(mkdtempSync(join(tmpdir(), 'keepalive-loop-')), 'bootstrap.json');
writeFileSync(config, JSON.stringify(bootstrap));
const main = new URL('../src/main.ts', import.meta.url).href;
const child = spawn(
  process.execPath,
  [
    '--import',
    'tsx',
    '-e',
    `import('${main}').then((m) => m.main(['-c', '${config}', '--concurrency', '1', '-l', 'error']))`,
  ],
  { stdio: ['ignore', 'ignore', 'inherit'] },
);
/** CPU time of the proxy process so far, in ms (clock ticks of 10 ms). */
const cpuMs = () => {
  const f = readFileSync(`/proc/${child.pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return (Number(f[11]) + Number(f[12])) * 10;
};

const agent = new http.Agent({ keepAlive: true, maxSockets: clients });
const get = () =>
  new Promise((resolve, reject) => {
    const rq = http.get({ host: '127.0.0.1', port: listenerPort, path: '/', agent }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode));
    });
    rq.on('error', reject);
  });
for (let i = 0; ; i++) {
  try {
    if ((await get()) === 200) break;
  } catch {}
  if (i > 200) throw new Error('the proxy did not answer within 20 s');
  await new Promise((resolve) => setTimeout(resolve, 100));
}
const run = async (ms) => {
  let n = 0;
  const end = Date.now() + ms;
  await Promise.all(
    Array.from({ length: clients }, async () => {
      while (Date.now() < end) {
        await get();
        n++;
      }
    }),
  );
  return n;
};
await run(2000);
const cpu0 = cpuMs();
const t0 = performance.now();
const n = await run(seconds * 1000);
const elapsed = (performance.now() - t0) / 1000;
const cpu = cpuMs() - cpu0;
console.log(
  JSON.stringify({
    clients,
    seconds: +elapsed.toFixed(1),
    requests: n,
    rps: Math.round(n / elapsed),
    proxyCpuUsPerReq: +((cpu * 1000) / n).toFixed(1),
  }),
);
child.kill('SIGTERM');
agent.destroy();
upstream.close();
process.exit(0);
