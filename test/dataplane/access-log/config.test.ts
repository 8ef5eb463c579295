/**
 * Root cause: a file access log's `path` was first opened by the data plane, after the config
 * was accepted; a directory there failed with EISDIR in a log line, and every access log line
 * after was lost while `--mode validate` said OK and an LDS push was ACKed. The reference opens
 * the file when it makes the config ("unable to open file"); now the compile step refuses a
 * path that is a directory, naming the field.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import type { JsonObject } from '../../../events/index.js';
import { Report } from '../../../src/bootstrap/report.js';
import { compileAccessLogs } from '../../../src/dataplane/access-log/config.js';
import { runProxy } from '../../helpers/cli.js';
import { startProxyProcess } from '../../helpers/proxy-process.js';
import { mountTinyFs } from '../../helpers/tiny-fs.js';
import { ADMIN, adsConfig, httpListener, staticCluster } from '../../helpers/xds-fixtures.js';
import { XdsServer } from '../../helpers/xds-server.js';

const dir = mkdtempSync(join(tmpdir(), 'proxy-access-log-config-'));
after(() => rmSync(dir, { recursive: true, force: true }));

const FILE_LOG = 'type.googleapis.com/envoy.config.accesslog.v2.FileAccessLog';
const fileLog = (path: string): JsonObject => ({
  name: 'envoy.file_access_log',
  typed_config: { '@type': FILE_LOG, path },
});

/** An HTTP listener logging to `path`. */
function logging(name: string, path: string): JsonObject {
  const l = httpListener(name, 'none');
  const hcm = (l.filter_chains as Array<{ filters: Array<{ typed_config: JsonObject }> }>)[0]!.filters[0]!
    .typed_config;
  hcm.access_log = [fileLog(path)];
  return l;
}

describe('compileAccessLogs', () => {
  it('refuses a path that is a directory, naming the field; a file, new or not, is fine', () => {
    writeFileSync(join(dir, 'old.log'), '');
    const report = new Report('t');
    compileAccessLogs(
      [fileLog(dir), fileLog(join(dir, 'old.log')), fileLog(join(dir, 'new.log'))],
      'x',
      report,
    );
    assert.deepEqual(
      report.problems.map((p) => `${p.path}: ${p.message}`),
      [`x[0].typed_config.path: unable to open file '${dir}': is a directory`],
    );
  });
});

describe('an access log path that is a directory', () => {
  it('fails --mode validate naming the field', async () => {
    const file = join(dir, 'bootstrap.json');
    writeFileSync(file, JSON.stringify({ static_resources: { listeners: [logging('l', dir)] } }));
    const run = await runProxy(['--mode', 'validate', '-c', file]);
    assert.equal(run.code, 1, run.stderr);
    assert.match(
      run.stderr,
      /filter_chains\[0\]\.filters\[0\]\.typed_config\.access_log\[0\]\.typed_config\.path: unable to open file '.*': is a directory/,
    );
  });

  it('in an LDS push is NACKed; the other listener is unchanged', async () => {
    const xds = await XdsServer.start();
    const ADS_V3 = { ads: {}, resource_api_version: 'V3' };
    xds.set('lds', [logging('good', join(dir, 'good.log'))], 'l1');
    const proxy = await startProxyProcess(
      {
        admin: ADMIN,
        dynamic_resources: { lds_config: ADS_V3, ads_config: adsConfig('V3') },
        static_resources: { clusters: [staticCluster('xds_cluster', [xds.port], true)] },
      },
      ['--concurrency', '1'],
    );
    try {
      await xds.ack('lds', 'l1');
      const from = xds.requests.length;
      xds.set('lds', [logging('good', join(dir, 'good.log')), logging('bad', dir)], 'l2');
      const nack = await xds.nack('lds', 20_000, from);
      assert.match(
        nack.error_detail?.message ?? '',
        /Listener 'bad': .*access_log\[0\]\.typed_config\.path: unable to open file/,
      );
      assert.match((await proxy.get('/listeners')).body, /^good::/m);
      assert.doesNotMatch((await proxy.get('/listeners')).body, /bad/);
    } finally {
      await proxy.stop();
      await xds.stop();
    }
  });
});

/**
 * Root cause: only a directory was refused; any other path the file could not be opened at (a
 * read-only filesystem, a directory that does not exist, no permission) passed `--mode
 * validate` and an LDS push was ACKed, then the data plane's open failed with one log line
 * (`cannot open access log: EROFS ...`) and every access log line was lost while the listener
 * served. The reference's open fails the config (`unable to open file '...': Read-only file
 * system`); now the compile step asks whether the file could be opened for appending, without
 * creating it.
 */
describe('an access log path that cannot be opened for appending', () => {
  const tiny = mountTinyFs('64k');
  after(() => {
    if (typeof tiny !== 'string') tiny.unmount();
  });

  it('is refused naming the field and the reason: a read-only filesystem, a missing directory', (t) => {
    if (typeof tiny === 'string') return t.skip(tiny);
    writeFileSync(join(tiny.dir, 'old.log'), '');
    execFileSync('mount', ['-o', 'remount,ro', tiny.dir]);
    try {
      const report = new Report('t');
      compileAccessLogs(
        [
          fileLog(join(tiny.dir, 'old.log')),
          fileLog(join(tiny.dir, 'new.log')),
          fileLog(join(dir, 'missing', 'x.log')),
          fileLog(join(dir, 'fine.log')),
        ],
        'x',
        report,
      );
      assert.deepEqual(
        report.problems.map((p) => `${p.path}: ${p.message}`),
        [
          `x[0].typed_config.path: unable to open file '${tiny.dir}/old.log': read-only file system (EROFS)`,
          `x[1].typed_config.path: unable to open file '${tiny.dir}/new.log': read-only file system (EROFS)`,
          `x[2].typed_config.path: unable to open file '${dir}/missing/x.log': no such file or directory (ENOENT)`,
        ],
      );
      assert.equal(existsSync(join(dir, 'fine.log')), false, 'asking creates no file');
    } finally {
      execFileSync('mount', ['-o', 'remount,rw', tiny.dir]);
    }
  });

  it('on a read-only filesystem in an LDS push is NACKed; the listener before it serves on', async (t) => {
    if (typeof tiny === 'string') return t.skip(tiny);
    const xds = await XdsServer.start();
    const ADS_V3 = { ads: {}, resource_api_version: 'V3' };
    xds.set('lds', [logging('good', join(dir, 'good.log'))], 'l1');
    const proxy = await startProxyProcess(
      {
        admin: ADMIN,
        dynamic_resources: { lds_config: ADS_V3, ads_config: adsConfig('V3') },
        static_resources: { clusters: [staticCluster('xds_cluster', [xds.port], true)] },
      },
      ['--concurrency', '2'],
    );
    execFileSync('mount', ['-o', 'remount,ro', tiny.dir]);
    try {
      await xds.ack('lds', 'l1');
      const from = xds.requests.length;
      xds.set('lds', [logging('good', join(dir, 'good.log')), logging('bad', join(tiny.dir, 'a.log'))], 'l2');
      const nack = await xds.nack('lds', 20_000, from);
      assert.match(
        nack.error_detail?.message ?? '',
        /Listener 'bad': .*access_log\[0\]\.typed_config\.path: unable to open file '.*a\.log': read-only file system \(EROFS\)/,
      );
      assert.match((await proxy.get('/listeners')).body, /^good::/m);
      assert.doesNotMatch((await proxy.get('/listeners')).body, /bad/);
    } finally {
      execFileSync('mount', ['-o', 'remount,rw', tiny.dir]);
      await proxy.stop();
      await xds.stop();
    }
  });
});
