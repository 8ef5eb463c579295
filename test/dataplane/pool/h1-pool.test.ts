import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import * as http from 'node:http';
import type * as net from 'node:net';
import { after, before, test } from 'node:test';
import { hcmConfig, startProxy, type TestProxy } from '../../helpers/http-dataplane.js';

// Plain upstream connections read into one buffer shared by all of them: these check that no
// body byte is kept from it past a read, whatever the framing, concurrency or back-pressure.

const bodies = Array.from({ length: 8 }, (_, i) => randomBytes(256 * 1024 + i * 977));
const digest = (b: Buffer) => createHash('sha256').update(b).digest('hex');

let upstream: http.Server;
let proxy: TestProxy;

before(async () => {
  upstream = http.createServer((req, res) => {
    const [, kind, n] = (req.url ?? '').split('/');
    const body = bodies[Number(n)] as Buffer;
    if (kind === 'chunked') {
      // Uneven writes, some after a pause, so chunk boundaries fall anywhere in a read.
      let off = 0;
      const step = () => {
        if (off >= body.length) return res.end();
        const size = 1 + ((off * 7919) % 40000);
        res.write(body.subarray(off, off + size));
        off += size;
        if (off % 3 === 0) setImmediate(step);
        else step();
      };
      step();
    } else {
      res.setHeader('content-length', body.length);
      res.end(body);
    }
  });
  await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
  const port = (upstream.address() as net.AddressInfo).port;
  proxy = await startProxy(hcmConfig('backend'), [
    { raw: { name: 'backend', connect_timeout: '1s' }, addresses: [`127.0.0.1:${port}`] },
  ]);
});

after(async () => {
  await proxy.close();
  upstream.close();
});

/** GETs `path` through the proxy, reading slowly when `slow` (the socket paused now and then). */
function get(path: string, slow: boolean): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const req = http.get({ host: '127.0.0.1', port: proxy.port, path, agent: false }, (res) => {
      const parts: Buffer[] = [];
      res.on('data', (c: Buffer) => {
        parts.push(c);
        if (slow && parts.length % 4 === 0) {
          res.pause();
          setTimeout(() => res.resume(), 5);
        }
      });
      res.on('end', () => resolve(Buffer.concat(parts)));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.setTimeout(15000, () => req.destroy(new Error('timed out')));
  });
}

test('length-framed and chunked bodies arrive byte for byte to a slow reader', async () => {
  for (const kind of ['length', 'chunked']) {
    const got = await get(`/${kind}/3`, true);
    assert.equal(got.length, (bodies[3] as Buffer).length, kind);
    assert.equal(digest(got), digest(bodies[3] as Buffer), kind);
  }
});

test('concurrent responses on several upstream connections do not mix their bytes', async () => {
  const paths = bodies.flatMap((_, i) => [`/length/${i}`, `/chunked/${i}`]);
  const got = await Promise.all(paths.map((p, i) => get(p, i % 3 === 0)));
  got.forEach((body, i) => {
    const n = Number((paths[i] as string).split('/')[2]);
    assert.equal(digest(body), digest(bodies[n] as Buffer), String(paths[i]));
  });
  assert.ok(proxy.counter('cluster.backend.upstream_cx_total') > 1, 'more than one upstream connection');
});
