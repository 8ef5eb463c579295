/**
 * `application_log_config` (Istio's bootstraps set the proxy's own log format there): its
 * `text_format` is the process's `--log-format`, given both is an error as in the reference,
 * and `json_format` is refused by name.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { errorsOf, loadYaml } from '../helpers/bootstrap.js';
import { runCli } from '../helpers/bootstrap.js';
import { startProxyProcess } from '../helpers/proxy-process.js';

const ADMIN = `admin: { address: { socket_address: { address: 127.0.0.1, port_value: 0 } } }`;

describe('application_log_config', () => {
  it('sets the log format of the process (its workers too)', async () => {
    const proxy = await startProxyProcess(
      {
        admin: { address: { socket_address: { address: '127.0.0.1', port_value: 0 } } },
        application_log_config: { log_format: { text_format: 'MESH %l\t%n\t%v' } },
      },
      ['--concurrency', '2'],
    );
    try {
      const lines = proxy.stderr().split('\n').filter(Boolean);
      assert.ok(lines.length > 0);
      for (const line of lines) assert.match(line, /^MESH (info|warning|debug|error)\t\w+\t/, line);
    } finally {
      await proxy.stop();
    }
  });

  it('and --log-format both: an error naming the field', async () => {
    const yaml = `${ADMIN}\napplication_log_config: { log_format: { text_format: '%v' } }`;
    const run = await runCli(['--mode', 'validate', '--config-yaml', yaml, '--log-format', '%l %v']);
    assert.equal(run.status, 1);
    assert.match(run.stderr, /application_log_config\.log_format: is set and so is --log-format/);
    const alone = await runCli(['--mode', 'validate', '--config-yaml', yaml]);
    assert.equal(alone.status, 0, alone.stderr);
  });

  it('refuses json_format by name', () => {
    const errors = errorsOf(
      loadYaml(`application_log_config: { log_format: { json_format: { message: '%v' } } }`),
    );
    assert.match(
      errors.join('\n'),
      /application_log_config\.log_format\.json_format: JSON application logs .* is not implemented/,
    );
  });
});
