/**
 * Root cause: files a config names were read with a bare `readFileSync`, whatever they were.
 * A management server pushing a cluster whose CA `filename` was `/dev/zero` (or a link to it)
 * made the main thread read for ever, and a FIFO with no writer blocked it for ever: every
 * xDS stream, the admin and `/ready` stopped answering; `--mode validate -c` on either never
 * returned. The reference refuses paths under `/dev`, `/sys` and `/proc` ("Invalid path",
 * except `/dev/fd/N`); now the same, and anything else that is not a regular file is refused
 * before a byte is read.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { closeSync, mkdirSync, mkdtempSync, openSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { JsonObject } from '../../events/index.js';
import { readNamedFile } from '../../src/bootstrap/read-file.js';
import { runProxy } from '../helpers/cli.js';
import { type ProxyProcess, startProxyProcess } from '../helpers/proxy-process.js';
import { cdsOverAds } from '../helpers/xds-fixtures.js';
import { XdsServer } from '../helpers/xds-server.js';

const dir = mkdtempSync(join(tmpdir(), 'proxy-read-file-'));
const file = (name: string) => join(dir, name);
writeFileSync(file('plain.pem'), 'bytes');
symlinkSync('/dev/zero', file('zero.pem'));
symlinkSync('/dev/zero', file('zero.yaml'));
execFileSync('mkfifo', [file('fifo.pem'), file('fifo.yaml')]);
mkdirSync(file('dir.pem'));
after(() => rmSync(dir, { recursive: true, force: true }));

describe('readNamedFile', () => {
  it('reads regular files and /dev/fd/N; refuses /dev, /sys, /proc and what is not a regular file', () => {
    assert.equal(readNamedFile(file('plain.pem')).toString(), 'bytes');
    const fd = openSync(file('plain.pem'), 'r');
    try {
      assert.equal(readNamedFile(`/dev/fd/${fd}`).toString(), 'bytes');
    } finally {
      closeSync(fd);
    }
    for (const [path, error] of [
      [file('zero.pem'), /Invalid path: .*zero\.pem$/],
      ['/dev/zero', /Invalid path: \/dev\/zero$/],
      ['/proc/self/environ', /Invalid path/],
      ['/sys/kernel/mm/transparent_hugepage/enabled', /Invalid path|ENOENT/],
      [file('fifo.pem'), /not a regular file: .*fifo\.pem$/],
      [file('dir.pem'), /not a regular file/],
      [file('absent.pem'), /ENOENT/],
    ] as const)
      assert.throws(() => readNamedFile(path), error, path);
  });
});

describe('proxy --mode validate -c', () => {
  for (const name of ['zero.yaml', 'fifo.yaml'])
    it(`refuses ${name} at once, naming it`, async () => {
      const run = await runProxy(['--mode', 'validate', '-c', file(name)], {}, 20_000);
      assert.equal(run.code, 1, run.stderr);
      assert.match(
        run.stderr,
        new RegExp(`${name}: cannot read the config file: (Invalid path|not a regular file)`),
      );
    });
});

describe('a discovered cluster naming a device or a FIFO as its CA file', () => {
  let xds: XdsServer;
  let proxy: ProxyProcess;
  const cluster = (name: string, ca: string): JsonObject => ({
    name,
    connect_timeout: '1s',
    type: 'STATIC',
    load_assignment: {
      cluster_name: name,
      endpoints: [
        {
          lb_endpoints: [
            { endpoint: { address: { socket_address: { address: '127.0.0.1', port_value: 1 } } } },
          ],
        },
      ],
    },
    transport_socket: {
      name: 'envoy.transport_sockets.tls',
      typed_config: {
        '@type': 'type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.UpstreamTlsContext',
        common_tls_context: { validation_context: { trusted_ca: { filename: ca } } },
      },
    },
  });

  before(async () => {
    xds = await XdsServer.start();
    xds.set('cds', [], 'c0');
    proxy = await startProxyProcess(cdsOverAds(xds.port), ['--concurrency', '1']);
  });
  after(async () => {
    await proxy?.stop();
    await xds?.stop();
  });

  for (const name of ['zero.pem', 'fifo.pem', 'dir.pem'])
    it(`NACKs ${name} naming the field; the process answers on`, async () => {
      const from = xds.requests.length;
      xds.set('cds', [cluster('web', file(name))], `c-${name}`);
      const nack = await xds.nack('cds', 20_000, from);
      assert.match(
        nack.error_detail?.message ?? '',
        new RegExp(`trusted_ca\\.filename: cannot read '.*${name}': (Invalid path|not a regular file)`),
      );
      assert.equal((await proxy.get('/ready')).status, 200);
    });
});
