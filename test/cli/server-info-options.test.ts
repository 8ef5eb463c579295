import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { DEFAULT_OPTIONS, parseCommandLine } from '../../src/cli/parse.js';
import { commandLineOptionsJson } from '../../src/cli/server-info-options.js';

describe('commandLineOptionsJson', () => {
  it('prints the defaults with the server info keys and proto3 JSON forms', () => {
    const json = commandLineOptionsJson({ ...DEFAULT_OPTIONS, concurrency: 4 });
    assert.deepEqual(json, {
      base_id: '0',
      use_dynamic_base_id: false,
      base_id_path: '',
      concurrency: 4,
      config_path: '',
      config_yaml: '',
      allow_unknown_static_fields: false,
      reject_unknown_dynamic_fields: false,
      ignore_unknown_dynamic_fields: false,
      admin_address_path: '',
      local_address_ip_version: 'v4',
      log_level: 'info',
      component_log_level: '',
      log_format: '[%Y-%m-%d %T.%e][%t][%l][%n] [%g:%#] %v',
      log_format_escaped: false,
      log_path: '',
      hot_restart_version: false,
      service_cluster: '',
      service_node: '',
      service_zone: '',
      file_flush_interval: '10s',
      drain_time: '600s',
      drain_strategy: 'Gradual',
      parent_shutdown_time: '900s',
      mode: 'Serve',
      disable_hot_restart: false,
      enable_mutex_tracing: false,
      restart_epoch: 0,
      cpuset_threads: false,
      disabled_extensions: [],
      bootstrap_version: 0,
    });
  });

  it('echoes what the command line set, with enum names and durations', () => {
    const parsed = parseCommandLine(
      [
        '--mode=validate',
        '--drain-strategy=immediate',
        '--local-address-ip-version=v6',
        '--base-id=12',
        '--file-flush-interval-msec=1500',
        '--drain-time-s=30',
        '--parent-shutdown-time-s=60',
        '--disable-extensions=a/b',
        '-l',
        'warn',
      ],
      {},
    );
    assert.ok(parsed.ok);
    const json = commandLineOptionsJson(parsed.options);
    assert.equal(json.mode, 'Validate');
    assert.equal(json.drain_strategy, 'Immediate');
    assert.equal(json.local_address_ip_version, 'v6');
    assert.equal(json.base_id, '12');
    assert.equal(json.file_flush_interval, '1.500s');
    assert.equal(json.drain_time, '30s');
    assert.equal(json.parent_shutdown_time, '60s');
    assert.deepEqual(json.disabled_extensions, ['a/b']);
    assert.equal(json.log_level, 'warning');
    assert.equal(commandLineOptionsJson({ ...DEFAULT_OPTIONS, mode: 'init_only' }).mode, 'InitOnly');
    assert.deepEqual(JSON.parse(JSON.stringify(json)), json);
  });
});
